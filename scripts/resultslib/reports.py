"""Reading result reports (ours from `gdnbench run --json`, the peers' from scripts/peers) and
slimming them for results/<gpu>/: the records stay, the per-sample arrays go."""

import json
import os
import re


class BadInput(Exception):
    """A file that is not a report, or an argument that names nothing usable (exit code 3)."""


# Per-sample arrays: the bulk of a report (a decode case holds up to 10^5 samples). The medians,
# quantiles and noise they gave stay in timing.stats, which is all `gdnbench compare` and the
# peer tables read.
BULK_TIMING_KEYS = ("samples_s",)


def load(path):
    """The report at path as a dict; BadInput naming the file when it is not one."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise BadInput(f"{path}: not UTF-8 text ({e.reason})")
    try:
        report = json.loads(text)
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}:{e.lineno}: not valid JSON: {e.msg}")
    if not isinstance(report, dict) or not isinstance(report.get("schema_version"), int):
        raise BadInput(f"{path}: not a gdnbench or peer report (no integer schema_version)")
    if not isinstance(report.get("cases"), list):
        raise BadInput(f"{path}: cases: expected a list of records")
    for i, case in enumerate(report["cases"]):
        if not isinstance(case, dict):
            raise BadInput(f"{path}: cases[{i}]: expected an object")
        for key in ("op", "variant", "shape_key", "status"):
            if not isinstance(case.get(key), str):
                raise BadInput(f"{path}: cases[{i}].{key}: expected a string (got {json.dumps(case.get(key))})")
    return report


def slim(report):
    """A copy of report without the per-sample arrays; everything else (tool, git_sha, argv,
    config, devices, calibration, times, and per record the shape, plan, status, verification,
    stats, noise, work, metrics, peak, kernel breakdown) kept as written."""
    out = json.loads(json.dumps(report))
    dropped = set()
    for case in out["cases"]:
        timing = case.get("timing")
        if not isinstance(timing, dict):
            continue
        for key in BULK_TIMING_KEYS:
            if key in timing:
                del timing[key]
                dropped.add(f"cases[].timing.{key}")
    if dropped or "slim" in out:
        out["slim"] = {"dropped": sorted(set(out.get("slim", {}).get("dropped", [])) | dropped)}
    return out


def dumps(report):
    """Deterministic text: sorted keys, one space of indent, a final newline."""
    return json.dumps(report, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def write_atomic(path, text):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def is_ours(report):
    return report.get("tool", {}).get("name") == "gdnbench"


def device_names(report):
    return [d.get("name", "") for d in report.get("devices", []) if isinstance(d, dict) and d.get("name")]


def gpu_folder_name(device_name):
    """results/<gpu>/ for a device: the model ("NVIDIA H100 80GB HBM3" -> "h100", "NVIDIA GeForce
    RTX 4090" -> "rtx4090"), else the name in lower case with dashes."""
    m = re.search(r"\b(RTX|GTX)\s+(\w+)", device_name) or re.search(r"\b([A-Z]+[0-9]+[A-Za-z]*)\b", device_name)
    if m:
        return "".join(m.groups()).lower()
    name = re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-")
    if not name:
        raise BadInput(f"no folder name in device name {device_name!r}; give --gpu")
    return name


# ---- records ----------------------------------------------------------------------------------


def median_s(case):
    timing = case.get("timing") or {}
    value = (timing.get("stats") or {}).get("median")
    return value if isinstance(value, (int, float)) else None


def measured(case):
    """Verified (ok) and timed with a positive median: the records that give numbers."""
    m = median_s(case)
    return case.get("status") == "ok" and bool(case.get("timed")) and m is not None and m > 0


def on_host(case):
    return (case.get("timing") or {}).get("timer") == "host"


def kernels_sum_s(case):
    value = (case.get("timing") or {}).get("kernels_sum_median_s")
    return value if isinstance(value, (int, float)) and value > 0 else None


def row_key(case):
    """The peer tables' row: the same op, shape and timing mode (src/report/peer_table.cpp)."""
    return (case["op"], case["shape_key"], case.get("mode", "cold"))


def number(record, *path):
    for key in path:
        record = record.get(key) if isinstance(record, dict) else None
    return record if isinstance(record, (int, float)) and not isinstance(record, bool) else None

"""gdnbench's report schema (src/report/record.h, report.h, json_report.cpp; schema_version 1):
field names in snake_case as in the structs, enums by name, non-finite numbers as null. Keys the
C++ loader does not know (notes, harness, ...) are ignored by it and kept for people."""

import datetime
import json
import math
import os
import platform
import socket

SCHEMA_VERSION = 1
STATUSES = ("ok", "skipped", "verify_failed", "error")


def num(x):
    """A JSON number, or None (null) for NaN/Inf and missing values."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def sample_num(x):
    # Timer resolution is 1 ns at best; rounding keeps long sample arrays short (as gdnbench does).
    return round(x * 1e9) / 1e9 if math.isfinite(x) else None


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def stats_json(s):
    keys = ("n", "min", "p10", "p25", "median", "mean", "p75", "p90", "max", "stdev", "rel_stdev", "noise")
    return {k: (int(s[k]) if k == "n" else num(s[k])) for k in keys}


def check_json(tensor, rel_l2=math.nan, max_abs=math.nan, tolerance=math.nan, checked=0, nonfinite=0,
               passed=False, untouched_diff=0):
    # unwritten: peers allocate or own their outputs' contents, so poisoning is not observed.
    # untouched_diff: changed elements of pool slots no row names (peers that update a pool in place).
    return {"tensor": tensor, "rel_l2": num(rel_l2), "max_abs": num(max_abs), "tolerance": num(tolerance),
            "checked": int(checked), "nonfinite": int(nonfinite), "unwritten": 0, "untouched_diff": int(untouched_diff),
            "pass": bool(passed)}


def verification_json(ran=False, passed=False, scope="", seconds=0.0, checks=()):
    return {"ran": bool(ran), "pass": bool(passed), "scope": scope, "seconds": num(seconds), "checks": list(checks)}


def timing_json(timer, samples, stats, converged, stop_reason, wall_s, kernels, sm_clock_mhz, kernels_sum_median_s):
    return {"timer": timer, "stats": stats_json(stats), "samples_s": [sample_num(x) for x in samples],
            "converged": bool(converged), "stop_reason": stop_reason, "wall_s": num(wall_s),
            "kernels": [{"name": k["name"], "median_s": num(k["median_s"]), "share": num(k["share"])} for k in kernels],
            "sm_clock_mhz": num(sm_clock_mhz),
            # Not in gdnbench's schema: the median per-sample sum of kernel durations. Against the
            # span it shows the gaps between kernels (host launch latency of a multi-kernel call).
            "kernels_sum_median_s": num(kernels_sum_median_s)}


def record_json(point, variant, mode, device, status="ok", reason="", verification=None, timing=None,
                work=None, notes=(), wall_s=0.0):
    """One CaseRecord. point: a plan point ({case, op, seed, shape_key, shape})."""
    assert status in STATUSES, status
    work = work or {"bytes": math.nan, "flops": math.nan, "flops_fi": math.nan, "bandwidth_bound": True}
    median = timing["stats"]["median"] if timing else None
    timed = status in ("ok", "verify_failed") and timing is not None and median is not None and median > 0

    def per_s(x, scale):
        return num(x / median / scale) if timed and x is not None and math.isfinite(x) else None

    return {
        "case": point["case"],
        "op": point["op"],
        "variant": variant,
        "shape": point["shape"],
        "shape_key": point["shape_key"],
        "mode": mode,
        "device": device,
        "seed": int(point["seed"]),
        "threshold_pct": None,
        "status": status,
        "reason": reason,
        "verification": verification or verification_json(),
        "timed": timed,
        "timing": timing,
        "work": {"bytes": num(work["bytes"]), "flops": num(work["flops"]), "flops_fi": num(work["flops_fi"]),
                 "bandwidth_bound": bool(work["bandwidth_bound"])},
        "metrics": {"tflops": per_s(work["flops"], 1e12), "tflops_fi": per_s(work["flops_fi"], 1e12),
                    "tbps": per_s(work["bytes"], 1e12), "roofline_pct": None},
        # No roofline: the peaks are gdnbench's calibration, which this harness does not measure.
        "peak": {"kind": "copy_bandwidth" if work["bandwidth_bound"] else "bf16_mma", "value": None,
                 "source": "not measured by the peer harness"},
        "throttled": False,
        "wall_s": num(wall_s),
        "notes": list(notes),
    }


def host_info():
    cpu, mem, llc = "", 0, 0
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    try:
        with open("/sys/devices/system/cpu/cpu0/cache/index3/size") as f:
            text = f.read().strip()
            llc = int(text[:-1]) * {"K": 1 << 10, "M": 1 << 20}.get(text[-1], 1) if text[-1] in "KM" else int(text)
    except (OSError, ValueError, IndexError):
        pass
    return {"hostname": socket.gethostname(), "cpu_model": cpu, "logical_cores": os.cpu_count() or 0,
            "memory_bytes": mem, "llc_bytes": llc, "os": platform.release()}


def report_json(tool_version, argv, plan, mode, devices, started_at, harness, tool_name="fla"):
    """The RunReport shell; cases are appended and the file rewritten after every point."""
    cfg = plan.get("config", {}) if plan else {}
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": tool_name, "version": tool_version, "git_sha": ""},
        "argv": list(argv),
        "command": "peer",
        "config": {"path": cfg.get("path", ""), "hash": cfg.get("hash", "")},
        "mode": mode,
        "started_at": started_at,
        "finished_at": "",
        "complete": False,
        "host": host_info(),
        "devices": list(devices),
        "calibration": {},
        "harness": harness,
        "cases": [],
    }


def finite(obj):
    """obj with every NaN/Inf float replaced by None: JSON has no such numbers (gdnbench writes null)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def write_atomic(path, doc):
    """Writes path.tmp.<pid>, fsyncs it and renames it over path (a reader never sees half a file)."""
    text = json.dumps(finite(doc), indent=1, allow_nan=False) + "\n"
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)

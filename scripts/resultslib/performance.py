"""docs/PERFORMANCE.md and the README's results snapshot as views of results/<gpu>/*.json.

Per results folder and device: the reports (command, commit, device, date), then per op every
variant's verification counts and a table of points: each of our GPU variants, each peer, ours
(the fastest of our verified variants at the point) over the fastest verified peer, as
`gdnbench peers` computes it (src/report/peer_table.cpp). Same inputs, same bytes out."""

import math
import os

from . import reports as rp

OPS = ("prefill", "decode", "mtp")
SNAPSHOT_BEGIN = "<!-- results:begin -->"
SNAPSHOT_END = "<!-- results:end -->"
COMMAND = "python3 scripts/results.py performance"


# ---- gathering ----------------------------------------------------------------------------------


def read_results(root):
    """[(folder, [(file name, report), ...]), ...]: every results/<folder>/*.json, sorted."""
    folders = []
    for folder in sorted(os.listdir(root)):
        path = os.path.join(root, folder)
        if not os.path.isdir(path):
            continue
        files = sorted(f for f in os.listdir(path) if f.endswith(".json"))
        if files:
            folders.append((folder, [(f, rp.load(os.path.join(path, f))) for f in files]))
    return folders


def run_date(report):
    return (report.get("started_at") or report.get("finished_at") or "")[:10]


class Section:
    """One op on one device: the newest record of every (variant, row), ours and the peers'."""

    def __init__(self, op):
        self.op = op
        self.ours = {}  # variant -> {row: record}
        self.peers = {}
        self.rows = []  # rows of our GPU records, first-seen order
        self.dates = set()
        self.configs = set()  # our reports' sweep files

    def add(self, case, ours, date, config=""):
        table = self.ours if ours else self.peers
        table.setdefault(case["variant"], {})[rp.row_key(case)] = case
        if ours and not rp.on_host(case) and rp.row_key(case) not in self.rows:
            self.rows.append(rp.row_key(case))
        self.dates.add(date)
        if ours and config:
            self.configs.add(config)


def sweep_name(config_path):
    """A sweep file by its name; a sweep given by flags (run -a) as "command line" (its flags are
    in PERFORMANCE.md's report table)."""
    if config_path.startswith("command line:"):
        return "command line"
    return config_path.rsplit("/", 1)[-1]


def sections_by_device(named_reports):
    """{device: {op: Section}} from one folder's reports, oldest run first so the newest wins."""
    ordered = sorted(named_reports, key=lambda nr: (nr[1].get("started_at", ""), nr[0]))
    devices = {}
    for _, report in ordered:
        ours = rp.is_ours(report)
        gpu_names = rp.device_names(report)
        for case in report["cases"]:
            device = case.get("device", "")
            # CPU records of a GPU host belong to that host's GPU section (their verification counts).
            if device not in gpu_names:
                if not gpu_names:
                    continue
                device = gpu_names[0]
            sec = devices.setdefault(device, {}).setdefault(case["op"], Section(case["op"]))
            # A `run --peers` report holds the peers' records too (origin kind "harness").
            mine = ours and (case.get("origin") or {}).get("kind") != "harness"
            sec.add(case, mine, run_date(report), (report.get("config") or {}).get("path", ""))
    return devices


# ---- numbers ------------------------------------------------------------------------------------


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def us(seconds):
    return f"{seconds * 1e6:.2f}" if seconds else "-"


def ratio(x):
    return f"{x:.2f}x" if x is not None else "-"


def pct(x):
    return f"{x:.1f}" if x is not None else "-"


def median(values):
    values = sorted(values)
    n = len(values)
    if not n:
        return None
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2


def cell(case):
    if case is None:
        return "-"
    if rp.measured(case):
        return us(rp.median_s(case))
    return {"skipped": "skip", "verify_failed": "FAIL", "error": "error"}.get(case.get("status"), "-")


def rate(case):
    if case["op"] == "prefill" and rp.number(case, "metrics", "tflops") is not None:
        fi = rp.number(case, "metrics", "tflops_fi")
        return f"{case['metrics']['tflops']:.0f} / {fi if fi is not None else case['metrics']['tflops']:.0f} TFLOP/s"
    tbps = rp.number(case, "metrics", "tbps")
    return f"{tbps:.2f} TB/s" if tbps is not None else "-"


class Row:
    """One point: our fastest verified GPU record, the fastest verified peer, and their ratios."""

    def __init__(self, sec, key):
        self.key = key
        self.ours_cases = [sec.ours[v].get(key) for v in sorted(sec.ours)]
        self.peer_cases = [sec.peers[v].get(key) for v in sorted(sec.peers)]
        timed = [c for c in self.ours_cases if c is not None and rp.measured(c) and not rp.on_host(c)]
        self.best = min(timed, key=rp.median_s) if timed else None
        peers = [c for c in self.peer_cases if c is not None and rp.measured(c)]
        self.best_peer = min(peers, key=rp.median_s) if peers else None
        sums = [rp.kernels_sum_s(c) for c in peers if rp.kernels_sum_s(c)]
        self.best_peer_kernels = min(sums) if sums else None
        ours = rp.median_s(self.best) if self.best else None
        self.over_best = ours / rp.median_s(self.best_peer) if ours and self.best_peer else None
        self.over_kernels = ours / self.best_peer_kernels if ours and self.best_peer_kernels else None


class OpSummary:
    """What the README snapshot and the section's summary lines read."""

    def __init__(self, sec):
        self.op = sec.op
        self.rows = [Row(sec, key) for key in sec.rows]
        self.rows = [r for r in self.rows if r.best is not None]
        self.over_best = geomean([r.over_best for r in self.rows if r.over_best])
        self.compared = sum(1 for r in self.rows if r.over_best)
        self.peer_ahead = sum(1 for r in self.rows if r.over_best and r.over_best > 1.0)
        self.over_kernels = geomean([r.over_kernels for r in self.rows if r.over_kernels])
        self.compared_kernels = sum(1 for r in self.rows if r.over_kernels)
        self.kernels_ahead = sum(1 for r in self.rows if r.over_kernels and r.over_kernels > 1.0)
        roofs = [rp.number(r.best, "metrics", "roofline_pct") for r in self.rows]
        self.roof_median = median([x for x in roofs if x is not None])
        self.peer_tools = sorted({v.split("/")[0] for v in sec.peers})
        self.date = max(sec.dates) if sec.dates else ""
        self.configs = sorted(sec.configs)
        self.per_peer = []
        for variant in sorted(sec.peers):
            spans, sums = [], []
            for r in self.rows:
                c = sec.peers[variant].get(r.key)
                if c is None or not rp.measured(c):
                    continue
                spans.append(rp.median_s(r.best) / rp.median_s(c))
                if rp.kernels_sum_s(c):
                    sums.append(rp.median_s(r.best) / rp.kernels_sum_s(c))
            self.per_peer.append((variant, spans, sums))


# ---- markdown -----------------------------------------------------------------------------------


def md(text):
    return str(text).replace("|", "\\|")


def command_line(report):
    argv = [str(a) for a in report.get("argv", [])]
    if argv:
        argv[0] = os.path.basename(argv[0])
    return " ".join(argv) or report.get("command", "")


def record_counts(report):
    counts = {}
    for case in report["cases"]:
        counts[case["status"]] = counts.get(case["status"], 0) + 1
    parts = [f"{counts[s]} {s}" for s in ("ok", "verify_failed", "error", "skipped") if s in counts]
    return f"{len(report['cases'])}: " + ", ".join(parts) if parts else "0"


def reports_table(folder, named_reports):
    out = ["| report | tool | command | commit | device | date | records |", "|---|---|---|---|---|---|---|"]
    notes = []
    for name, r in named_reports:
        tool = r.get("tool", {})
        commit = tool.get("git_sha") or "-"
        devices = ", ".join(sorted(set(rp.device_names(r)))) or r.get("host", {}).get("cpu_model", "-")
        out.append(f"| `results/{folder}/{name}` | {md(tool.get('name', '?'))} {md(tool.get('version', ''))} | "
                   f"`{md(command_line(r))}` | `{md(commit)}` | {md(devices)} | {run_date(r) or '-'} | "
                   f"{record_counts(r)}{'' if r.get('complete', True) else ' (incomplete)'} |")
        if r.get("note"):
            notes.append(f"- `results/{folder}/{name}`: {r['note']}")
    return out + ([""] + notes if notes else [])


def verification_table(sec):
    out = ["| variant | timer | points | verified | failed | errors | skipped | roofline % (median) |",
           "|---|---|---:|---:|---:|---:|---:|---:|"]
    for table in (sec.ours, sec.peers):
        for variant in sorted(table):
            cases = list(table[variant].values())
            n = {s: sum(1 for c in cases if c["status"] == s) for s in ("ok", "verify_failed", "error", "skipped")}
            timers = sorted({(c.get("timing") or {}).get("timer") for c in cases} - {None, ""})
            roofs = [rp.number(c, "metrics", "roofline_pct") for c in cases if rp.measured(c)]
            out.append(f"| {md(variant)} | {md(', '.join(timers)) or '-'} | {len(cases)} | {n['ok']} | "
                       f"{n['verify_failed']} | {n['error']} | {n['skipped']} | "
                       f"{pct(median([x for x in roofs if x is not None]))} |")
    return out


def points_table(sec, summary):
    ours = [v for v in sorted(sec.ours) if any(not rp.on_host(c) for c in sec.ours[v].values())]
    peers = sorted(sec.peers)
    kernels = summary.compared_kernels > 0
    head = ["shape"] + ours + peers + ["best peer", "ours / best peer"]
    head += ["best peer kernels", "ours / kernels"] if kernels else []
    head += ["ours rate", "roof %"]
    out = ["| " + " | ".join(md(h) for h in head) + " |",
           "|---|" + "---:|" * (len(ours) + len(peers)) + "---|---:|" + ("---:|---:|" if kernels else "") + "---:|---:|"]
    for row in summary.rows:
        op, shape, mode = row.key
        cells = [f"`{md(shape)}`" + ("" if mode == "cold" else f" ({mode})")]
        for v in ours:
            c = sec.ours[v].get(row.key)
            cells.append(f"**{cell(c)}**" if c is row.best else cell(c))
        cells += [cell(sec.peers[v].get(row.key)) for v in peers]
        cells.append(md(row.best_peer["variant"]) if row.best_peer else "-")
        cells.append(ratio(row.over_best))
        if kernels:
            cells += [us(row.best_peer_kernels), ratio(row.over_kernels)]
        cells += [rate(row.best), pct(rp.number(row.best, "metrics", "roofline_pct"))]
        out.append("| " + " | ".join(cells) + " |")
    return out


def summary_lines(summary):
    if not summary.compared:
        return [f"Points timed on the GPU: {len(summary.rows)}; no verified peer record at these points."]
    out = [f"Ours / best peer, geometric mean over {summary.compared} points: **{ratio(summary.over_best)}**; "
           f"a peer is faster on {summary.peer_ahead}."]
    if summary.compared_kernels:
        out.append(f"Ours / a peer's summed kernel time (the host's gaps between its kernels left out), geometric "
                   f"mean over {summary.compared_kernels} points: {ratio(summary.over_kernels)}; below ours on "
                   f"{summary.kernels_ahead}.")
    out += ["", "| peer | points | ours / peer | peer faster on | ours / peer kernels | peer kernels faster on |",
            "|---|---:|---:|---:|---:|---:|"]
    for variant, spans, sums in summary.per_peer:
        out.append(f"| {md(variant)} | {len(spans)} | {ratio(geomean(spans))} | {sum(x > 1 for x in spans)} | "
                   f"{ratio(geomean(sums)) if sums else '-'} | {sum(x > 1 for x in sums) if sums else '-'} |")
    return out


HEADER = f"""# Performance

Generated by `{COMMAND}` from the reports under `results/<gpu>/`: edit or add
reports, then run the command; do not edit this file by hand. The same command refreshes the
results snapshot in `README.md`; `--check` exits 1 when either is out of date (a CPU test runs it).

To add a run: a suite of `scripts/bench-gpu.sh` (or `gdnbench run --config CONFIG --json OUT`
and the harnesses of `scripts/peers/` on the same points) writes our report and one per peer,
e.g. `out/prefill-sample.ours.json` and `out/prefill-sample.flashinfer.json`. Then
`python3 scripts/results.py add out/prefill-sample.ours.json out/prefill-sample.flashinfer.json`
slims them into `results/<gpu>/`, the folder named from the device (`--note TEXT` keeps a line
about the run with the report), and `{COMMAND}` regenerates this page. A slim
report keeps every record's shape, plan, status, verification, statistics, noise, work, metrics
and peak; only the per-sample arrays go, so `gdnbench compare` and `gdnbench peers` read it as
they read the full report.

How to read the tables:
- Times are medians in microseconds (`docs/method.md`: cold L2, CUPTI kernel spans, the noise
  stopping rule). `skip`, `FAIL`, `error`: the record has no verified number, and why.
- **Ours** at a point is the fastest of our verified GPU variants there (bold). **Ours / best
  peer** is its time over the fastest verified peer's on the same device, op, shape and mode:
  below 1 ours is faster. Geometric means are over the points where both have a number.
- **Peer kernels** is a peer's summed kernel time (its report's `kernels_sum_median_s`), which
  leaves out the host's gaps between its kernels; ours is always the whole span.
- **Roof %** is ours against the device's calibrated peak (`gdnbench calibrate`): the bf16 MMA
  rate for prefill, copy bandwidth for decode and mtp. **Ours rate** is TFLOP/s in our and
  FlashInfer's FLOP conventions for prefill, TB/s otherwise (`docs/report-schema.md`).
- When two reports hold the same variant and point, the newer run's record is shown.
"""


def render_performance(folders):
    out = [HEADER.rstrip("\n")]
    if not folders:
        out += ["", "No report is committed under `results/` yet."]
    for folder, named in folders:
        for device, ops in sorted(sections_by_device(named).items()):
            out += ["", f"## {md(device)} (`results/{folder}/`)", "", "### Reports", ""]
            out += reports_table(folder, named)
            for op in OPS:
                if op not in ops:
                    continue
                sec = ops[op]
                summary = OpSummary(sec)
                out += ["", f"### {device}: {op}", "", "Every record, ours and the peers':", ""]
                out += verification_table(sec)
                if summary.rows:
                    out += ["", "Points timed on the GPU (median us):", ""]
                    out += points_table(sec, summary)
                    out += [""] + summary_lines(summary)
    return "\n".join(out) + "\n"


def render_snapshot(folders):
    lines = [SNAPSHOT_BEGIN,
             f"<!-- generated by `{COMMAND}` from results/: do not edit by hand -->",
             "",
             "| GPU | op | sweep | points | ours / best peer | a peer faster on | ours / peer kernels | peer kernels "
             "faster on | peers | roofline % (median) | run |",
             "|---|---|---|---:|---:|---:|---:|---:|---|---:|---|"]
    any_rows = False
    for folder, named in folders:
        for device, ops in sorted(sections_by_device(named).items()):
            for op in OPS:
                if op not in ops:
                    continue
                s = OpSummary(ops[op])
                if not s.rows:
                    continue
                any_rows = True
                ahead = f"{s.peer_ahead} of {s.compared}" if s.compared else "-"
                ahead_kernels = f"{s.kernels_ahead} of {s.compared_kernels}" if s.compared_kernels else "-"
                # The file name says which sweep; the full path is in PERFORMANCE.md's report table.
                sweeps = ", ".join(f"`{md(sweep_name(c))}`" for c in s.configs) or "-"
                lines.append(f"| {md(device)} | {op} | {sweeps} | {len(s.rows)} | {ratio(s.over_best)} | {ahead} | "
                             f"{ratio(s.over_kernels)} | {ahead_kernels} | "
                             f"{md(', '.join(s.peer_tools)) or '-'} | {pct(s.roof_median)} | {s.date} |")
    if not any_rows:
        lines.append("| - | - | - | 0 | - | - | - | - | - | - | - |")
    lines += ["",
              "Ours is the fastest of our verified variants at each point; ours / best peer is the geometric mean "
              "of our time over the fastest verified peer's (below 1: ours is faster); ours / peer kernels puts our "
              "span over the peer's summed kernel time, the host's gaps between its kernels left out. Every point, command and "
              "commit: [docs/PERFORMANCE.md](docs/PERFORMANCE.md).",
              SNAPSHOT_END]
    return "\n".join(lines)


def with_snapshot(readme_text, snapshot, readme_path="README.md"):
    begin, end = readme_text.find(SNAPSHOT_BEGIN), readme_text.find(SNAPSHOT_END)
    if begin < 0 or end < begin:
        raise rp.BadInput(f"{readme_path}: no '{SNAPSHOT_BEGIN}' ... '{SNAPSHOT_END}' block to refresh")
    return readme_text[:begin] + snapshot + readme_text[end + len(SNAPSHOT_END):]

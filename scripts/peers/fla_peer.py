#!/usr/bin/env python3
"""FLA peer harness: runs flash-linear-attention's Gated DeltaNet kernels (Triton) on the points
of a gdnbench plan and writes a report in gdnbench's JSON schema, so that
`gdnbench run --config X --peer fla.json` and `gdnbench compare` put ours and FLA side by side.

    gdnbench plan --config X --json plan.json
    python3 scripts/peers/fla_peer.py --plan plan.json --out fla.json [--mode cold|hot|graph]
        [--ops decode,mtp,prefill] [--min-samples N] [--device 0]

Without a GPU: --self-test (pure parts), --write-sample-report PATH (schema test only), --list
(which variant runs or is skipped for each point, and why). README.md beside this file says
what is measured and how it differs from gdnbench's own variants."""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from peerlib import fla_support  # noqa: E402
from peerlib import shapes as sh  # noqa: E402
from peerlib import stats as st  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--plan", help="points from `gdnbench plan --config X --json plan.json`")
    p.add_argument("--out", help="report to write (rewritten atomically after every point)")
    p.add_argument("--mode", default="cold", choices=["cold", "hot", "graph"],
                   help="cold: L2 flushed before every sample; hot: no flush; graph: CUDA-graph replay, flushed")
    p.add_argument("--ops", default="decode,mtp,prefill", help="comma-separated ops to run (default all)")
    p.add_argument("--variants", default="", help="comma-separated FLA variants (default all: fla/chunk, fla/fused_recurrent)")
    p.add_argument("--device", type=int, default=0, help="CUDA device index")
    p.add_argument("--timer", default="auto", choices=["auto", "cupti", "events"],
                   help="auto: CUPTI through torch.profiler, CUDA events on a graph replay if that fails")
    p.add_argument("--min-samples", type=int, default=10)
    p.add_argument("--max-noise", type=float, default=0.005, help="target relative noise of the median")
    p.add_argument("--min-time", type=float, default=0.05, help="minimum accumulated measured seconds")
    p.add_argument("--timeout", type=float, default=10.0, help="sampling seconds per point and variant")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls first (Triton compiles and autotunes)")
    p.add_argument("--resume", action="store_true",
                   help="keep the finished records of an existing --out (same FLA version and mode) and run the rest")
    p.add_argument("--no-verify", action="store_true", help="skip the comparison with the torch reference")
    p.add_argument("--verify-max-work", type=float, default=float(1 << 26),
                   help="verify every head when tokens x HV x K x V is at most this")
    p.add_argument("--verify-max-sampled-work", type=float, default=float(1 << 31),
                   help="else verify 4 whole value heads when their work is at most this")
    p.add_argument("--verify-max-steps", type=int, default=16384, help="longest sequence the reference walks")
    p.add_argument("--self-test", action="store_true", help="check the pure-Python parts and exit")
    p.add_argument("--write-sample-report", metavar="PATH", help="write a schema-test report (no measurement) and exit")
    p.add_argument("--list", action="store_true", help="print what would run for each plan point and exit")
    args = p.parse_args(argv)
    args.ops = [o for o in args.ops.split(",") if o]
    bad = [o for o in args.ops if o not in fla_support.VARIANTS]
    if bad:
        p.error(f"unknown op(s) {', '.join(bad)}; valid: {', '.join(fla_support.VARIANTS)}")
    args.variants = [v for v in args.variants.split(",") if v]
    known = {v for vs in fla_support.VARIANTS.values() for v in vs}
    if any(v not in known for v in args.variants):
        p.error(f"unknown variant in --variants; valid: {', '.join(sorted(known))}")
    if not (args.self_test or args.write_sample_report or args.list):
        if not args.plan or not args.out:
            p.error("--plan and --out are required")
    if args.list and not args.plan:
        p.error("--list needs --plan")
    args.rule = st.StoppingRule(warmup_runs=args.warmup, min_samples=args.min_samples, min_time_s=args.min_time,
                                max_noise=args.max_noise, timeout_s=args.timeout)
    return args


def load_plan(path):
    try:
        with open(path) as f:
            plan = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"fla_peer: cannot read plan '{path}': {e}")
    if not isinstance(plan, dict) or not isinstance(plan.get("points"), list):
        sys.exit(f"fla_peer: '{path}' is not a gdnbench plan (no 'points' list); make one with "
                 "`gdnbench plan --config X --json plan.json`")
    return plan


def previous_cases(path, version, mode):
    """Finished records (not errors) of an earlier run of the same FLA version and mode."""
    try:
        with open(path) as f:
            old = json.load(f)
    except (OSError, ValueError):
        return []
    if old.get("tool", {}).get("version") != version or old.get("mode") != mode:
        print(f"fla_peer: --resume ignores '{path}' (another FLA version or mode)", file=sys.stderr)
        return []
    return [c for c in old.get("cases", []) if c.get("status") != "error"]


def list_plan(args):
    """What each point would run, from the rules alone (FLA 0.6.0's capabilities)."""
    plan = load_plan(args.plan)
    for point in plan["points"]:
        s = sh.normalize(point["shape"])
        if s["op"] not in args.ops:
            continue
        for v in fla_support.VARIANTS[s["op"]]:
            if args.variants and v not in args.variants:
                continue
            p = fla_support.plan_point(s, v)
            what = f"skip: {p.skip}" if p.skip else "run" + (f" ({'; '.join(p.differences)})" if p.differences else "")
            print(f"{point['case']:<22} {v:<20} {point['shape_key']}\n    {what}")
    return 0


def run(args, argv):
    import torch

    from peerlib import devices, runner
    from peerlib import report as rp

    plan = load_plan(args.plan)
    if not torch.cuda.is_available():
        sys.exit("fla_peer: torch sees no CUDA device (this harness times GPU kernels)")
    torch.cuda.set_device(args.device)
    try:
        fla = runner.load_fla()
    except ImportError as e:
        sys.exit(f"fla_peer: cannot import FLA ({e}); install fla-core (scripts/peers/fetch-fla.sh)")
    import triton
    harness = {"name": "scripts/peers/fla_peer.py", "torch": torch.__version__, "triton": triton.__version__,
               "fla_backend_dispatch": "on" if fla.dispatch else "off (FLA_DISABLE_BACKEND_DISPATCH=1)",
               "stopping_rule": vars(args.rule),
               "inputs": "SPEC 3 distributions drawn with torch.Generator(seed) on the device (not gdnbench's numbers)"}
    report = rp.report_json(fla.version, ["fla_peer.py", *argv], plan, args.mode, [devices.device_info(args.device)],
                            rp.now_iso(), harness)
    r = runner.Runner(args, fla, args.device, report, args.out)
    if args.resume:
        for c in previous_cases(args.out, fla.version, args.mode):
            report["cases"].append(c)
            r.done.add((c["case"], c["variant"], c["shape_key"], c["seed"]))
    r.save()
    todo = [pt for pt in plan["points"] if pt.get("op") in args.ops]
    print(f"fla_peer: FLA {fla.version} on {report['devices'][0]['name']}, mode {args.mode}, {len(todo)} points "
          f"({len(r.done)} records kept from the previous run)", file=sys.stderr)
    for point in plan["points"]:
        if point.get("op") in args.ops:
            r.run_point(point)
    report["finished_at"] = rp.now_iso()
    report["complete"] = True
    r.save()
    statuses = [c["status"] for c in report["cases"]]
    print(f"fla_peer: {len(statuses)} records ({', '.join(f'{statuses.count(s)} {s}' for s in rp.STATUSES)}) "
          f"written to {args.out}", file=sys.stderr)
    return 0


def main(argv):
    args = parse_args(argv)
    if args.self_test:
        from peerlib import selftest
        return selftest.run()
    if args.write_sample_report:
        from peerlib import sample_report
        sample_report.write(args.write_sample_report)
        return 0
    if args.list:
        return list_plan(args)
    return run(args, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The command line every peer harness shares (scripts/peers/<peer>_peer.py): arguments, the
plan, --list, --resume, the run loop. A harness is `cli.main(peers.PEERS[name], argv)`."""

import argparse
import json
import re
import sys
import time

from . import shapes as sh
from . import stats as st


def parse_args(peer, argv, doc):
    p = argparse.ArgumentParser(prog=f"{peer.name}_peer.py", description=doc.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--plan", help="points from `gdnbench plan --config X --json plan.json`")
    p.add_argument("--out", help="report to write (rewritten atomically after every point)")
    p.add_argument("--mode", choices=["cold", "hot", "graph"],
                   help="the plan's mode unless given; cold: L2 flushed before every sample; hot: no flush; "
                        "graph: CUDA-graph replay, flushed")
    p.add_argument("--ops", default="decode,mtp,prefill", help="comma-separated ops to run (default all)")
    known = sorted({v for vs in peer.variants.values() for v in vs})
    p.add_argument("--variants", default="", help=f"comma-separated variants (default all: {', '.join(known)})")
    p.add_argument("--cases", default="", help="comma-separated plan cases to run (default all)")
    p.add_argument("--first", type=int, default=0, help="run plan points from this index (0-based; for split sweeps)")
    p.add_argument("--count", type=int, default=0, help="run at most this many plan points (0: all)")
    p.add_argument("--budget", type=float, default=0.0,
                   help="start no new point after this many wall seconds (0: no limit); the report stays "
                        "incomplete and a later --resume run goes on from there")
    p.add_argument("--device", type=int, default=0, help="CUDA device index")
    p.add_argument("--timer", default="auto", choices=["auto", "cupti", "events"],
                   help="auto: CUPTI through torch.profiler, CUDA events on a graph replay if that fails")
    # The stopping rule is the plan's (gdnbench's, or the run's under `gdnbench run --peers`);
    # these flags override one part of it.
    p.add_argument("--min-samples", type=int, help="the plan's stopping_rule.min_samples unless given")
    p.add_argument("--max-noise", type=float, help="target relative noise of the median (the plan's unless given)")
    p.add_argument("--min-time", type=float, help="minimum accumulated measured seconds (the plan's unless given)")
    p.add_argument("--timeout", type=float, help="sampling seconds per point and variant (the plan's unless given)")
    p.add_argument("--warmup", type=int, help="untimed calls first, the first one compiles (the plan's unless given)")
    p.add_argument("--resume", action="store_true",
                   help="keep the finished records of an existing --out (same peer version and mode) and run the rest")
    p.add_argument("--no-verify", action="store_true", help="skip the comparison with the torch reference")
    p.add_argument("--verify-max-work", type=float, default=float(1 << 26),
                   help="verify every head when tokens x HV x K x V is at most this")
    p.add_argument("--verify-max-sampled-work", type=float, default=float(1 << 31),
                   help="else verify 4 whole value heads when their work is at most this")
    p.add_argument("--verify-max-steps", type=int, default=32768,
                   help="longest sequence the reference walks (32768: every qwen35 prefill cell, ~2 s of token loop)")
    p.add_argument("--self-test", action="store_true", help="check the pure-Python parts and exit")
    p.add_argument("--write-sample-report", metavar="PATH", help="write a schema-test report (no measurement) and exit")
    p.add_argument("--list", action="store_true", help="print what would run for each plan point and exit")
    p.add_argument("--check-import", action="store_true", help="import the peer, print its versions and kernels, exit")
    for flags, kwargs in peer.extra_args:
        p.add_argument(*flags, **kwargs)
    args = p.parse_args(argv)
    args.ops = [o for o in args.ops.split(",") if o]
    bad = [o for o in args.ops if o not in peer.variants]
    if bad:
        p.error(f"unknown op(s) {', '.join(bad)}; valid: {', '.join(peer.variants)}")
    args.variants = [v for v in args.variants.split(",") if v]
    if any(v not in known for v in args.variants):
        p.error(f"unknown variant in --variants; valid: {', '.join(known)}")
    args.cases = [c for c in args.cases.split(",") if c]
    if not (args.self_test or args.write_sample_report or args.list or args.check_import):
        if not args.plan or not args.out:
            p.error("--plan and --out are required")
    if args.list and not args.plan:
        p.error("--list needs --plan")
    return args


# What each plan point carries for the harness (gdnbench's contract, docs/report-schema.md "Plan JSON").
CONTRACT_KEYS = ("work", "tolerances", "inputs")


def apply_plan(peer, args, plan):
    """The run's mode and stopping rule: the plan's, with the flags given over them."""
    lacking = [k for k in ("stopping_rule", "mode") if k not in plan]
    lacking += sorted({k for pt in plan["points"] for k in CONTRACT_KEYS if k not in pt})
    if lacking:
        sys.exit(f"{peer.name}_peer: the plan has no {', '.join(lacking)}: an older gdnbench wrote it; write it with "
                 "this gdnbench's `gdnbench plan --config X --json plan.json` (or let `gdnbench run --peers` run the "
                 "harness)")
    try:
        args.rule = st.rule_from_plan(plan["stopping_rule"], warmup_runs=args.warmup, min_samples=args.min_samples,
                                      min_time_s=args.min_time, max_noise=args.max_noise, timeout_s=args.timeout)
    except ValueError as e:
        sys.exit(f"{peer.name}_peer: {e}")
    args.mode = args.mode or plan["mode"]


def load_plan(peer, path):
    try:
        with open(path) as f:
            plan = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"{peer.name}_peer: cannot read plan '{path}': {e}")
    if not isinstance(plan, dict) or not isinstance(plan.get("points"), list):
        sys.exit(f"{peer.name}_peer: '{path}' is not a gdnbench plan (no 'points' list); make one with "
                 "`gdnbench plan --config X --json plan.json`")
    return plan


def selected_points(args, plan):
    """The plan points this run covers: the default-plan points (a non-default `plan` is one of
    our variants' knobs, nothing a peer runs), --ops, --cases, then the --first/--count window."""
    points = [pt for pt in plan["points"] if pt.get("op") in args.ops and (not args.cases or pt["case"] in args.cases)
              and sh.default_plan(pt)]
    points = points[args.first:]
    return points[: args.count] if args.count > 0 else points


def verifiable_now(case, max_steps):
    """A record left unverified for its length ("too large (N steps > M)") that max_steps now
    covers: --resume runs it again rather than keep an unverified number."""
    m = re.match(r"not verified: too large \((\d+) steps > \d+\)", case.get("verification", {}).get("scope", ""))
    return m is not None and int(m.group(1)) <= max_steps


def resumable_report(peer, path, version, mode):
    """The earlier report at path if --resume can keep its records (same peer, version and mode), else None."""
    try:
        with open(path) as f:
            old = json.load(f)
    except (OSError, ValueError):
        return None
    if old.get("tool", {}).get("name") != peer.name or old.get("tool", {}).get("version") != version \
            or old.get("mode") != mode:
        print(f"{peer.name}_peer: --resume ignores '{path}' (another peer, version or mode)", file=sys.stderr)
        return None
    return old


def previous_cases(old, max_steps=None):
    """Finished records (not errors) of an earlier report (resumable_report; None: none); with
    max_steps, not those it would now verify (verifiable_now)."""
    return [c for c in (old or {}).get("cases", [])
            if c.get("status") != "error" and not (max_steps is not None and verifiable_now(c, max_steps))]


def merged_devices(current, old):
    """current, then the devices of the earlier report (None: none) not among them (by uuid):
    records kept from another machine keep their machine listed."""
    seen = {d.get("uuid") for d in current}
    return list(current) + [d for d in (old or {}).get("devices", []) if d.get("uuid") not in seen]


def list_plan(peer, args):
    """What each point would run, from the rules alone (the peer's documented capabilities)."""
    plan = load_plan(peer, args.plan)
    for point in selected_points(args, plan):
        s = sh.normalize(point["shape"])
        if not peer.variants[s["op"]]:
            print(f"{point['case']:<22} {'-':<32} {point['shape_key']}\n    no {peer.name} variant for {s['op']}")
        for v in peer.variants[s["op"]]:
            if args.variants and v not in args.variants:
                continue
            p = peer.plan_point(s, v, None)
            what = f"skip: {p.skip}" if p.skip else f"run {p.function}" + (
                f" ({'; '.join(p.differences)})" if p.differences else "")
            print(f"{point['case']:<22} {v:<32} {point['shape_key']}\n    {what}")
    return 0


def check_import(peer):
    """Imports the peer as the harness does and prints its versions and unusable kernels; exit 1
    with the import error and the install hint when it cannot be imported."""
    try:
        loaded = peer.load()
    except ImportError as e:
        print(f"{peer.name}: cannot import {peer.title} ({e}); {peer.install_hint}")
        return 1
    print(f"{peer.name} {loaded.version}: " + ", ".join(f"{k} {v}" for k, v in loaded.harness.items()))
    for key, reason in (loaded.caps.items() if isinstance(loaded.caps, dict) else []):
        print(f"  unusable: {key}: {reason}")
    return 0


def on_host(peer, args, have_cuda):
    """Whether this run is torch on the CPU: a harness that can (runs_on_host), without a CUDA
    device or with --cpu. There is no graph on the host (as for gdnbench's CPU variants)."""
    host = peer.runs_on_host and (getattr(args, "cpu", False) or not have_cuda)
    if host and args.mode == "graph":
        sys.exit(f"{peer.name}_peer: --mode graph needs a CUDA device (there is no graph on the host)")
    return host


def gpu_versions(host):
    """Triton's version for the report's harness block (the GPU path imports it; the host does not)."""
    if host:
        return {}
    import triton
    return {"triton": triton.__version__}


def run(peer, args, argv):
    import torch

    from . import devices, runner
    from . import report as rp

    plan = load_plan(peer, args.plan)
    apply_plan(peer, args, plan)
    host = on_host(peer, args, torch.cuda.is_available())
    if not host and not torch.cuda.is_available():
        sys.exit(f"{peer.name}_peer: torch sees no CUDA device (this harness times GPU kernels)")
    if not host:
        torch.cuda.set_device(args.device)
    try:
        loaded = peer.load()
    except ImportError as e:
        sys.exit(f"{peer.name}_peer: cannot import {peer.title} ({e}); {peer.install_hint}")
    harness = {"name": peer.script, "torch": torch.__version__, **gpu_versions(host), **loaded.harness,
               "stopping_rule": vars(args.rule), "timing_method": runner.timing_method(args.mode, host),
               "inputs": "docs/method.md 3 distributions drawn with torch.Generator(seed) on the device (not gdnbench's numbers)"}
    report = rp.report_json(loaded.version, [f"{peer.name}_peer.py", *argv], plan, args.mode,
                            [] if host else [devices.device_info(args.device)], rp.now_iso(), harness,
                            tool_name=peer.name)
    r = runner.Runner(args, peer, loaded, None if host else args.device, report, args.out)
    if args.resume:
        old = resumable_report(peer, args.out, loaded.version, args.mode)
        report["devices"] = merged_devices(report["devices"], old)
        for c in previous_cases(old, args.verify_max_steps):
            report["cases"].append(c)
            r.done.add((c["case"], c["variant"], c["shape_key"], c["seed"]))
    r.save()
    todo = selected_points(args, plan)
    print(f"{peer.name}_peer: {peer.title} {loaded.version} on {r.device_name}, mode {args.mode}, "
          f"{len(todo)} points ({len(r.done)} records kept from the previous run)", file=sys.stderr)
    start, left = time.monotonic(), 0
    for i, point in enumerate(todo):
        if args.budget > 0 and time.monotonic() - start > args.budget:
            left = len(todo) - i
            break
        r.run_point(point)
    report["finished_at"] = rp.now_iso()
    report["complete"] = left == 0
    r.save()
    if left:
        print(f"{peer.name}_peer: --budget {args.budget:g} s reached with {left} points left; run the same command "
              "with --resume to go on", file=sys.stderr)
    statuses = [c["status"] for c in report["cases"]]
    print(f"{peer.name}_peer: {len(statuses)} records ({', '.join(f'{statuses.count(s)} {s}' for s in rp.STATUSES)}) "
          f"written to {args.out}", file=sys.stderr)
    return 0


def main(peer, argv, doc):
    args = parse_args(peer, argv, doc)
    if args.self_test:
        from . import selftest
        return selftest.run()
    if args.write_sample_report:
        from . import sample_report
        if not args.plan:
            sys.exit(f"{peer.name}_peer: --write-sample-report needs --plan (gdnbench plan --config "
                     "tests/peers/schema-points.yaml --json plan.json)")
        plan = load_plan(peer, args.plan)
        apply_plan(peer, args, plan)
        sample_report.write(args.write_sample_report, peer, plan)
        return 0
    if args.list:
        return list_plan(peer, args)
    if args.check_import:
        return check_import(peer)
    return run(peer, args, argv)

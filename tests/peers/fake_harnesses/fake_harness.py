"""A stand-in for the peer harnesses (scripts/peers/*_peer.py) with their command line, for
`gdnbench run --peers` / `--kernel` on the CPU (tests/cpu/test_run_peers.cpp): it reads the plan
gdnbench writes and answers with records written by peerlib's own report writer. What each name
does is fixed here, so one folder holds every case the tests need:

  fla         importable; one timed `fla/fake` record per point, samples from the plan's stopping
              rule, and a deliberately wrong `stats` block (gdnbench recomputes the statistics)
  flashqla    not importable: --check-import fails as the real harness does
  flashinfer  importable; writes its first point's record, then dies with a traceback
  kernel      --kernel MODULE:FUNCTION; importable when MODULE is `good` or `wrong` (whose records
              fail verification), else not
With FAKE_HARNESS_KILLS_GDNBENCH set to 1 (or to a harness's name: that one only), a harness past its
import check kills gdnbench (its parent) with SIGKILL: a run stopped from outside while a peer runs.
With FAKE_HARNESS_KILLS_GDNBENCH_AFTER=N it does so after writing N records. --resume keeps the
records of the report already at --out (as peerlib's harnesses do) and runs the other points.
"""

import argparse
import json
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "peers"))

from peerlib import report as rp  # noqa: E402

FAKE_SPAN_S = 2e-5  # every sample: 20 us and a few ns


def main(name):
    p = argparse.ArgumentParser()
    p.add_argument("--plan")
    p.add_argument("--out")
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--no-verify", action="store_true")
    p.add_argument("--check-import", action="store_true")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--kernel", default="")
    p.add_argument("--variants", default="")  # one name: the records carry it, so a test sees it arrived
    args = p.parse_args()
    module = args.kernel.split(":")[0]
    importable = name in ("fla", "flashinfer") or (name == "kernel" and module in ("good", "wrong"))
    wrong = name == "kernel" and module == "wrong"
    if args.check_import:
        if not importable:
            what = module if name == "kernel" else name
            print(f"{name}: cannot import {what} (No module named '{what}'); pip install {what}")
            return 1
        print(f"{name} 0.0-fake: torch none")
        return 0
    if os.environ.get("FAKE_HARNESS_KILLS_GDNBENCH") in ("1", name):
        os.kill(os.getppid(), signal.SIGKILL)
        return 1
    with open(args.plan) as f:
        plan = json.load(f)
    rule = plan["stopping_rule"]
    variant = f"python:{args.kernel}/fn" if name == "kernel" else args.variants or f"{name}/fake"
    device = {"index": args.device, "name": "fake device", "uuid": "GPU-fake"}
    report = rp.report_json("0.0-fake", [f"{name}_peer.py", *sys.argv[1:]], plan, plan["mode"], [device],
                            rp.now_iso(), {"name": "fake"}, tool_name=name)
    done = set()
    if args.resume and os.path.exists(args.out):
        with open(args.out) as f:
            report["cases"] = json.load(f)["cases"]
        done = {(c["case"], c["shape_key"], c["seed"]) for c in report["cases"]}
    kill_after = int(os.environ.get("FAKE_HARNESS_KILLS_GDNBENCH_AFTER", "-1"))
    print(f"{name}_peer: {len(plan['points'])} points, mode {plan['mode']}, {len(done)} records kept", file=sys.stderr)
    for i, point in enumerate(plan["points"]):
        if (point["case"], point["shape_key"], point["seed"]) in done:
            continue
        if len(report["cases"]) == kill_after:
            os.kill(os.getppid(), signal.SIGKILL)
            return 1
        if name == "flashinfer" and i == 1:
            raise RuntimeError("fake harness crash in the second point")
        samples = [FAKE_SPAN_S + 1e-9 * (k % 3) for k in range(rule["min_samples"])]
        bogus = {k: 1.0 for k in ("min", "p10", "p25", "median", "mean", "p75", "p90", "max", "stdev",
                                  "rel_stdev", "noise")}
        bogus["n"] = len(samples)
        timing = rp.timing_json("fake-timer", samples, bogus, True, "noise", 0.01, [], 0.0, float("nan"))
        err = 0.5 if wrong else 1e-4
        checks = [rp.check_json(t, err, err, tol, 1, 0, err <= tol) for t, tol in point["tolerances"].items()]
        verification = rp.verification_json(not args.no_verify, not wrong, "full", 0.0,
                                            checks if not args.no_verify else [])
        rec = rp.record_json(point, variant, plan["mode"], device["name"], status="verify_failed" if wrong else "ok",
                             verification=verification, timing=timing, work=point["work"])
        report["cases"].append(rec)
        rp.write_atomic(args.out, report)
    report["finished_at"] = rp.now_iso()
    report["complete"] = True
    rp.write_atomic(args.out, report)
    return 0

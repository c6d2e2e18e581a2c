#!/usr/bin/env python3
"""The Python kernel interface end to end on the CPU (docs/python-kernels.md): `gdnbench plan` of
configs/python-kernel-cpu.yaml, then scripts/peers/kernel_peer.py with the examples of
examples/python-kernel/, then gdnbench itself on the reports:

- gdn_torch.py:gated_delta_rule (FLA's convention) verifies on every point it runs, and skips only
  the mtp cache points (FLA's convention has no cache) with that reason;
- gdn_torch.py:gdnbench_adapter (--convention gdnbench) verifies on every point, the cache included;
- gdn_wrong.py (every beta taken as 1) is verify_failed on every point it runs;
- a function's gdnbench_supports and gdnbench_name are honoured (tests/python-kernel/declining.py);
- every record names its origin (kind python, the file's path and SHA-256), device "host: ...",
  timer "host" (with --gpu: the CUDA device's name and the CUPTI or CUDA-event timer);
- `gdnbench compare` passes the correct report against itself and fails the wrong one (exit 1),
  and `gdnbench run --peer ... --baseline python:...` tabulates the function beside the CPU variants;
- `gdnbench run --kernel` runs this harness in one command: exit 0 for the correct function, 2 for
  the wrong one, 3 for a file that does not exist.

Needs torch: where neither python3 nor GDN_TORCH_SITE (default ~/.cache/gdnbench/torch-site,
scripts/install-torch.sh) gives one, exits 77 (ctest's skip) with the reason; so does --gpu (the
same on a CUDA device, ctest python_kernel.gpu) where torch sees no CUDA device. Prints
"N passed, M failed"."""

import argparse
import hashlib
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SKIP = 77
HARNESS = os.path.join(ROOT, "scripts", "peers", "kernel_peer.py")
EXAMPLES = os.path.join(ROOT, "examples", "python-kernel")
FAST = ["--timeout", "0.2", "--min-time", "0.01", "--warmup", "1"]
sys.path.insert(0, os.path.join(ROOT, "scripts", "peers"))

from peerlib import selftest  # noqa: E402 - the pure-Python part only (no torch here)


def torch_env():
    """The environment whose python3 imports torch, or None."""
    env = dict(os.environ)
    probe = [sys.executable, "-c", "import torch"]
    if subprocess.run(probe, env=env, capture_output=True).returncode == 0:
        return env
    site = os.environ.get("GDN_TORCH_SITE", os.path.expanduser("~/.cache/gdnbench/torch-site"))
    env["PYTHONPATH"] = os.pathsep.join(x for x in (site, env.get("PYTHONPATH", "")) if x)
    if os.path.isdir(site) and subprocess.run(probe, env=env, capture_output=True).returncode == 0:
        return env
    return None


class Checker(selftest.Checker):
    def __call__(self, cond, what):
        """selftest's Checker that also returns cond (what follows depends on it)."""
        super().__call__(cond, what)
        return cond


def run(cmd, env, what):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    print(f"$ {' '.join(cmd)}\n  exit {p.returncode}", flush=True)
    if p.returncode not in (0, 1, 3):
        print(p.stdout[-4000:], p.stderr[-4000:], sep="\n")
    return p


def harness(env, out_dir, kernel, name, *extra):
    out = os.path.join(out_dir, f"{name}.json")
    if os.path.exists(out):
        os.remove(out)
    p = run([sys.executable, HARNESS, "--kernel", kernel, "--plan", os.path.join(out_dir, "plan.json"), "--out", out,
             *FAST, *extra], env, name)
    report = None
    if p.returncode == 0 and os.path.exists(out):
        with open(out) as f:
            report = json.load(f)
    else:
        print(p.stderr[-4000:])
    return p, report


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check_records(c, report, name, module_file, variant, gpu):
    cases = report["cases"]
    c(len(cases) == 16, f"{name}: 16 records (one per plan point), got {len(cases)}")
    c(report["tool"]["name"] == "kernel" and report["command"] == "peer", f"{name}: tool kernel, command peer")
    c(report["complete"] is True, f"{name}: report complete")
    for r in cases:
        where = f"{name} {r['case']} {r['shape_key']}"
        c(r["variant"] == variant, f"{where}: variant {r['variant']} != {variant}")
        o = r.get("origin", {})
        c(o.get("kind") == "python" and o.get("path") == module_file and o.get("sha256") == sha256(module_file),
          f"{where}: origin {o} names {module_file} and its sha256")
        if r["status"] in ("ok", "verify_failed"):
            if gpu:
                c(not r["device"].startswith("host: "), f"{where}: device '{r['device']}' is the GPU")
                c(r["timing"]["timer"] != "host", f"{where}: timer {r['timing']['timer']} is a GPU timer")
            else:
                c(r["device"].startswith("host: "), f"{where}: device '{r['device']}' is the host")
                c(r["timing"]["timer"] == "host", f"{where}: host timer")
            c(r["timing"]["stats"]["n"] >= 1, f"{where}: samples")
            scope = r["verification"]["scope"]
            c(r["verification"]["ran"] and (scope == "full" or scope.startswith("full (")), f"{where}: verified in full")
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gdnbench", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--gpu", action="store_true", help="the same on a CUDA device (exit 77 without one)")
    a = ap.parse_args()
    env = torch_env()
    if env is None:
        print("torch is not importable (python3, nor GDN_TORCH_SITE / ~/.cache/gdnbench/torch-site): "
              "scripts/install-torch.sh installs it")
        return SKIP
    if a.gpu:
        probe = [sys.executable, "-c", "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)"]
        if subprocess.run(probe, env=env, capture_output=True).returncode != 0:
            print("torch sees no CUDA device: the GPU form of this test needs one")
            return SKIP
    os.makedirs(a.out, exist_ok=True)
    c = Checker()
    plan = os.path.join(a.out, "plan.json")
    p = run([a.gdnbench, "plan", "--config", os.path.join(ROOT, "configs", "python-kernel-cpu.yaml"), "--json", plan],
            env, "plan")
    if not c(p.returncode == 0, f"gdnbench plan: exit {p.returncode}\n{p.stderr}"):
        print(f"{c.passed} passed, {c.failed} failed")
        return 1

    torch_py = os.path.join(EXAMPLES, "gdn_torch.py")
    wrong_py = os.path.join(EXAMPLES, "gdn_wrong.py")

    # The correct function in FLA's convention: every point it runs verifies.
    p, ok = harness(env, a.out, f"{torch_py}:gated_delta_rule", "correct")
    if c(ok is not None, f"correct example: exit {p.returncode}"):
        cases = check_records(c, ok, "correct", torch_py, "python:gdn_torch/gated_delta_rule", a.gpu)
        for r in cases:
            where = f"correct {r['case']} {r['shape_key']}"
            if r["shape"]["op"] == "mtp" and r["shape"]["cache_intermediate"]:
                c(r["status"] == "skipped" and "intermediate-state output" in r["reason"], f"{where}: skipped, {r['reason']}")
            else:
                c(r["status"] == "ok" and r["verification"]["pass"], f"{where}: {r['status']} {r['reason']}")
        c(sum(r["status"] == "ok" for r in cases) == 14, "correct: 14 points verified")

    # The same recurrence through the adapter form: every point, the mtp cache included.
    p, adapter = harness(env, a.out, f"{torch_py}:gdnbench_adapter", "adapter", "--convention", "gdnbench")
    if c(adapter is not None, f"adapter: exit {p.returncode}"):
        cases = check_records(c, adapter, "adapter", torch_py, "python:gdn_torch/gdnbench_adapter", a.gpu)
        for r in cases:
            c(r["status"] == "ok" and r["verification"]["pass"], f"adapter {r['case']} {r['shape_key']}: {r['status']} "
              f"{r['reason']}")
        cache = [r for r in cases if r["shape"]["op"] == "mtp" and r["shape"]["cache_intermediate"]]
        c(len(cache) == 2 and all(any(x["tensor"] == "intermediate" for x in r["verification"]["checks"]) for r in cache),
          "adapter: the mtp cache is checked")

    # The deliberately wrong function: verification catches it on every point it runs.
    p, wrong = harness(env, a.out, f"{wrong_py}:gated_delta_rule", "wrong")
    if c(wrong is not None, f"wrong example: exit {p.returncode}"):
        cases = check_records(c, wrong, "wrong", wrong_py, "python:gdn_wrong/gated_delta_rule", a.gpu)
        ran = [r for r in cases if r["status"] != "skipped"]
        c(len(ran) == 14, f"wrong: 14 points ran, got {len(ran)}")
        for r in ran:
            c(r["status"] == "verify_failed" and not r["verification"]["pass"] and "disagrees" in r["reason"],
              f"wrong {r['case']} {r['shape_key']}: {r['status']} {r['reason']}")

    # gdnbench_supports and gdnbench_name (a module on PYTHONPATH this time, not a file path).
    env_here = dict(env, PYTHONPATH=os.pathsep.join([HERE, EXAMPLES, env.get("PYTHONPATH", "")]))
    p, declining = harness(env_here, a.out, "declining:gated_delta_rule", "declining", "--ops", "decode,mtp")
    if c(declining is not None, f"declining: exit {p.returncode}"):
        for r in declining["cases"]:
            c(r["variant"] == "python:declining", f"declining: variant {r['variant']} (gdnbench_name)")
            if r["op"] == "decode":
                c(r["status"] == "skipped" and r["reason"] == "the function declines: no decode here",
                  f"declining decode: {r['status']} '{r['reason']}'")
            elif not r["shape"]["cache_intermediate"]:
                c(r["status"] == "ok", f"declining mtp: {r['status']} {r['reason']}")
        c(all(r["op"] != "prefill" for r in declining["cases"]), "declining: --ops decode,mtp honoured")

    # Bad --kernel arguments: exit 3 naming what is wrong.
    for spec, word in ((os.path.join(a.out, "no-such-file.py") + ":f", "no such file"),
                       (f"{torch_py}:no_such_function", "no_such_function"),
                       ("no_such_module_gdn:f", "cannot import"), ("gdn_torch", "module:function")):
        p = run([sys.executable, HARNESS, "--kernel", spec, "--plan", plan, "--out", os.path.join(a.out, "x.json")],
                env_here, spec)
        c(p.returncode == 3 and word in p.stderr, f"--kernel {spec}: exit {p.returncode}, '{word}' in: {p.stderr}")

    # gdnbench on the reports.
    okf, wrongf = os.path.join(a.out, "correct.json"), os.path.join(a.out, "wrong.json")
    if ok is not None and wrong is not None:
        p = run([a.gdnbench, "compare", okf, okf], env, "compare")
        c(p.returncode == 0 and "PASS" in p.stdout, f"compare correct correct: exit {p.returncode}\n{p.stdout[-2000:]}")
        p = run([a.gdnbench, "compare", wrongf, wrongf], env, "compare")
        c(p.returncode == 1 and "failed-verification" in p.stdout,
          f"compare wrong wrong: exit {p.returncode} (1: verification failures)\n{p.stdout[-2000:]}")
    # The CPU variants stand beside the function on the host only (a table pairs one device).
    if ok is not None and wrong is not None and not a.gpu:
        base = "python:gdn_torch/gated_delta_rule"
        p = run([a.gdnbench, "run", "--config", os.path.join(ROOT, "configs", "python-kernel-cpu.yaml"), "--json",
                 os.path.join(a.out, "ours.json"), "--host-timeout", "0.2", "--peer", okf, "--peer", wrongf,
                 "--baseline", base], env, "run")
        table = p.stdout[p.stdout.find(f"{base} against every other"):] if base in p.stdout else ""
        c(p.returncode == 0 and table != "", f"run --peer --baseline: exit {p.returncode}, a table against {base}\n"
          f"{p.stdout[-3000:]}{p.stderr[-2000:]}")
        for op in ("prefill", "decode", "mtp"):
            c(f"{op}/cpu" in table, f"the baseline table has {op}/cpu beside the Python kernel")
        c("gdn_wrong" not in table, "the wrong example's verify_failed records give no number in the table")

    check_run_kernel(c, a, env, torch_py, wrong_py)
    print(f"{c.passed} passed, {c.failed} failed")
    return 0 if c.failed == 0 else 1


def check_run_kernel(c, a, env, torch_py, wrong_py):
    """One command: `gdnbench run --kernel` runs this harness itself, beside our CPU variants; its
    exit code is the function's verdict (0, 2 failed verification, 3 not importable)."""
    config = os.path.join(ROOT, "configs", "python-kernel-cpu.yaml")
    quick = ["--timeout", "0.2", "--host-timeout", "0.2", "--min-time", "0.01"]
    for kernel, name, want in ((f"{torch_py}:gated_delta_rule", "run-correct", 0),
                               (f"{wrong_py}:gated_delta_rule", "run-wrong", 2)):
        out = os.path.join(a.out, f"{name}.json")
        # The one command of the issue: the function verified, timed and tabulated beside our CPU variants.
        base = "python:gdn_torch/gated_delta_rule"
        beside = ["--baseline", base] if want == 0 and not a.gpu else []
        p = run([a.gdnbench, "run", "--config", config, "--kernel", kernel, "--json", out, *quick, *beside], env, name)
        if not c(p.returncode == want and os.path.exists(out), f"run --kernel {kernel}: exit {p.returncode}, want {want}"
                 f"\n{p.stdout[-2000:]}{p.stderr[-3000:]}"):
            continue
        if beside:
            table = p.stdout[p.stdout.find(f"{base} against every other"):] if base in p.stdout else ""
            for op in ("prefill", "decode", "mtp"):
                c(f"{op}/cpu" in table, f"run --kernel --baseline: the table has {op}/cpu beside the function\n"
                  f"{p.stdout[-3000:]}")
        with open(out) as f:
            cases = [r for r in json.load(f)["cases"] if r["variant"].startswith("python:")]
        statuses = sorted({r["status"] for r in cases})
        c(len(cases) == 16 and statuses == (["ok", "skipped"] if want == 0 else ["skipped", "verify_failed"]),
          f"run --kernel {name}: 16 records of the function, statuses {statuses}")
        timed = [r for r in cases if r["status"] != "skipped"]
        c(all(len(r.get("origin", {}).get("sha256", "")) == 64 for r in timed),
          f"run --kernel {name}: every record keeps the function file's sha256")
    p = run([a.gdnbench, "run", "--config", config, "--kernel", os.path.join(a.out, "absent.py") + ":f", *quick], env,
            "run-absent")
    c(p.returncode == 3 and "no such file" in p.stderr, f"run --kernel absent.py: exit {p.returncode}\n{p.stderr[-2000:]}")


if __name__ == "__main__":
    sys.exit(main())

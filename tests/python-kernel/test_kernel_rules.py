#!/usr/bin/env python3
"""The pure parts of the Python kernel interface, without torch: how --kernel is read
(peerlib/kernel_load.py), which points each convention runs or skips and why
(peerlib/kernel_rules.py), and `kernel_peer.py --list` on a torch-free function
(tests/python-kernel/fla_signature.py). Prints "N passed, M failed"."""

import argparse
import os
import subprocess
import sys
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "scripts", "peers"))

from peerlib import kernel_load, kernel_rules  # noqa: E402
from peerlib import shapes as sh  # noqa: E402
from peerlib.selftest import Checker  # noqa: E402

FLA_ARGS = {"q", "k", "v", "g", "beta", "scale", "initial_state", "output_final_state", "use_qk_l2norm_in_kernel",
            "cu_seqlens", "state_v_first", "use_gate_in_kernel", "A_log", "dt_bias", "use_beta_sigmoid_in_kernel"}


def kernel(accepts=None, convention="fla", supports=None):
    return SimpleNamespace(accepts=accepts, supports=supports, convention=convention, module="m", function="f")


def plan(shape, k):
    return kernel_rules.plan_point(sh.normalize(shape), "python:m/f", k)


def check_rules(c):
    full = kernel(FLA_ARGS)
    p = plan({"op": "prefill", "seqlens": [5, 7]}, full)
    c(not p.skip and p.function == "m.f", f"fla prefill runs: {p.skip}")
    p = plan({"op": "prefill", "seqlens": [5], "layout": "vk"}, kernel(FLA_ARGS - {"state_v_first"}))
    c("state_v_first" in p.skip, f"vk without state_v_first is skipped: {p.skip}")
    p = plan({"op": "prefill", "seqlens": [5], "layout": "kv"}, kernel(FLA_ARGS - {"state_v_first"}))
    c(not p.skip, "kv needs no state_v_first")
    p = plan({"op": "prefill", "seqlens": [5]}, kernel(FLA_ARGS - {"cu_seqlens"}))
    c("cu_seqlens" in p.skip, f"prefill without cu_seqlens is skipped: {p.skip}")
    p = plan({"op": "prefill", "seqlens": [4, 4], "pool": 8}, full)
    c("pool" in p.skip, f"the prefill pool form is skipped in FLA's convention: {p.skip}")
    p = plan({"op": "mtp", "batch": 2, "tokens": 3, "cache_intermediate": True}, full)
    c("intermediate" in p.skip, f"the mtp cache is skipped in FLA's convention: {p.skip}")
    p = plan({"op": "decode", "batch": 9, "indices": "padded", "pool": 18, "gate": "raw"}, full)
    c(not p.skip and p.raw_gate_in_kernel and "padding rows dropped" in p.differences, f"raw gate in the call: {p}")
    p = plan({"op": "decode", "batch": 2, "gate": "raw"}, kernel(FLA_ARGS - {"A_log"}))
    c(not p.raw_gate_in_kernel and "raw gate computed outside timing" in p.differences, "raw gate outside timing")
    p = plan({"op": "decode", "batch": 2, "gate": "raw", "state_dtype": "bf16"}, kernel(None))
    c(not p.skip and p.raw_gate_in_kernel, "**kwargs takes every argument; bf16 states run")
    p = plan({"op": "mtp", "batch": 2, "tokens": 3, "cache_intermediate": True}, kernel(None, "gdnbench"))
    c(not p.skip, f"the gdnbench convention runs the cache: {p.skip}")
    p = plan({"op": "mtp", "batch": 2, "tokens": 3, "cache_intermediate": True, "rollback": True},
             kernel(None, "gdnbench"))
    c("rollback" in p.skip, f"rollback is skipped: {p.skip}")
    p = plan({"op": "decode", "batch": 2}, kernel(FLA_ARGS, supports=lambda s: f"B={s['batch']} too small"))
    c(p.skip == "the function declines: B=2 too small", f"gdnbench_supports: {p.skip}")
    p = plan({"op": "decode", "batch": 2}, kernel(FLA_ARGS, supports=lambda s: 1 / 0))
    c(p.skip.startswith("the function's gdnbench_supports raised ZeroDivisionError"), f"a raising supports: {p.skip}")


def check_load(c):
    for spec, word in (("nocolon", "module:function"), (":f", "module:function"), ("m:", "module:function")):
        try:
            kernel_load.split_spec(spec)
            c(False, f"{spec} accepted")
        except kernel_load.KernelSpecError as e:
            c(word in str(e), f"{spec}: {e}")
    c(kernel_load.split_spec("a/b.py:fn") == ("a/b.py", "fn"), "path:function")
    c(kernel_load.variant_name("mod", "fn", None) == "python:mod/fn", "default variant name")
    c(kernel_load.variant_name("mod", "fn", "mine") == "python:mine", "declared variant name")
    for bad in ("two words", "a/b/c", "x" * 81, 7):
        try:
            kernel_load.variant_name("mod", "fn", bad)
            c(False, f"variant name {bad!r} accepted")
        except kernel_load.KernelSpecError:
            c(True, "")
    k = kernel_load.load_kernel(os.path.join(HERE, "fla_signature.py") + ":gated_delta_rule", "fla")
    c(k.variant == "python:fla_signature/gated_delta_rule" and k.accepts == FLA_ARGS, f"loaded: {k.variant} {k.accepts}")
    c(k.origin["kind"] == "python" and k.origin["path"] == os.path.join(HERE, "fla_signature.py")
      and len(k.origin["sha256"]) == 64, f"origin {k.origin}")
    try:
        kernel_load.load_kernel(os.path.join(HERE, "fla_signature.py") + ":gated_delta_rule", "triton")
        c(False, "unknown convention accepted")
    except kernel_load.KernelSpecError as e:
        c("fla, gdnbench" in str(e), str(e))


def check_list(c, gdnbench, out):
    """--list: the rules for every point, from a function that needs no torch."""
    os.makedirs(out, exist_ok=True)
    plan_json = os.path.join(out, "plan.json")
    p = subprocess.run([gdnbench, "plan", "--config", os.path.join(ROOT, "configs", "python-kernel-cpu.yaml"), "--json",
                        plan_json], capture_output=True, text=True)
    c(p.returncode == 0, f"gdnbench plan: exit {p.returncode}: {p.stderr}")
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "peers", "kernel_peer.py"), "--kernel",
           os.path.join(HERE, "fla_signature.py") + ":gated_delta_rule", "--list", "--plan", plan_json]
    p = subprocess.run(cmd, capture_output=True, text=True)
    c(p.returncode == 0, f"--list: exit {p.returncode}: {p.stderr}")
    c("run m" not in p.stdout and "run fla_signature.gated_delta_rule" in p.stdout, f"--list runs:\n{p.stdout}")
    c("skip: FLA's convention has no intermediate-state output" in p.stdout, f"--list skips:\n{p.stdout}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gdnbench", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    c = Checker()
    check_rules(c)
    check_load(c)
    check_list(c, a.gdnbench, a.out)
    print(f"{c.passed} passed, {c.failed} failed")
    return 0 if c.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

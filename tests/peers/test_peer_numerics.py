#!/usr/bin/env python3
"""The harness's torch path end to end on the CPU: inputs, argument mapping (TorchOps),
MappedCall / FlaCall, the restore of in-place tensors, read-back and verification, against numeric
stand-ins of FlashInfer, FlashQLA and FLA (numeric_fakes.py). Every runnable point must verify; the
negative control (a stand-in reading its state in the wrong layout) must fail. Needs torch (exit
2 with a message without it). Prints "N passed, M failed"."""

import os
import sys
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts", "peers"), HERE]

try:
    import torch  # noqa: F401 - only whether it imports
except ImportError:
    print("torch is not importable: the numeric peer tests need it")
    sys.exit(2)

import numeric_fakes as nf  # noqa: E402
from peerlib import fla_support, inputs, peers, reference_store  # noqa: E402
from peerlib import shapes as sh  # noqa: E402
from peerlib.selftest import Checker, test_inputs  # noqa: E402
from peerlib.verify import verify_call  # noqa: E402

def plan_tolerances(s):
    """The tolerances a plan point carries (kernels/*/op.cpp tolerances(), docs/method.md 4): test data."""
    if s["op"] == "prefill":
        return {"o": 5e-3, "ht": 5e-3}
    t = 1e-2 if s["state_dtype"] == "bf16" else 5e-3
    return {"o": t, "pool": t, **({"intermediate": t} if s["op"] == "mtp" and s["cache_intermediate"] else {})}


SMALL = {"h_qk": 1, "h_v": 2, "dk": 128, "dv": 128}
SHAPES = [
    {"op": "decode", "batch": 3},
    {"op": "decode", "batch": 9, "pool": 20, "indices": "padded", "gate": "raw", "index_dtype": "i32"},
    {"op": "decode", "batch": 9, "pool": 20, "indices": "padded", "state_dtype": "bf16"},
    {"op": "decode", "batch": 4, "pool": 12, "indices": "high", "state_dtype": "bf16", "gate": "raw"},
    {"op": "decode", "batch": 3, "layout": "kv"},
    {"op": "decode", "batch": 9, "pool": 20, "indices": "padded", "layout": "kv", "scale": 0.05, "l2norm": False},
    {"op": "mtp", "batch": 9, "tokens": 3, "pool": 20, "indices": "padded", "cache_intermediate": True},
    {"op": "mtp", "batch": 4, "tokens": 2, "update_state": False, "inputs": "strong_decay"},
    {"op": "mtp", "batch": 9, "tokens": 3, "pool": 20, "indices": "padded", "state_dtype": "bf16",
     "cache_intermediate": True},
    {"op": "prefill", "seqlens": [5, 0, 17]},
    {"op": "prefill", "seqlens": [9, 4], "gate": "raw", "has_h0": False},
    {"op": "prefill", "seqlens": [7, 6], "layout": "kv", "inputs": "beta_one"},
]


def loaded_peer(name, fns):
    if name == "fla":  # FlaCall's namespace (fla_load.load_fla), with FLA 0.6.0's capabilities
        return SimpleNamespace(chunk=fns["chunk"], recurrent=fns["recurrent"], prepare_chunk_indices=None,
                               caps=fla_support.Caps())
    return SimpleNamespace(fns=fns, caps={})


def run_peer(c, name, fns, shape, expect_pass=True):
    peer = peers.PEERS[name]
    s = sh.normalize(dict(SMALL, **shape))
    loaded = loaded_peer(name, fns)
    ran = 0
    for variant in peer.variants[s["op"]]:
        plan = peer.plan_point(s, variant, loaded.caps)
        if plan.skip:
            continue
        t = inputs.make_inputs(s, test_inputs(s["inputs"], s["h_v"], s["l2norm"]), 11, "cpu")
        call = peer.make_call(loaded, s, plan, t, "cpu")
        for _ in range(2):  # warm-up calls move in-place state: verification must restore it
            call()
        v = verify_call(call, s, plan_tolerances(s), {}, float(1 << 30), float(1 << 30), 1 << 20)
        what = f"{variant} {sh.shape_key(s)}: " + ", ".join(
            f"{x['tensor']} {x['rel_l2']} untouched {x['untouched_diff']}" for x in v["checks"])
        c(v["ran"] and v["pass"] == expect_pass, ("" if expect_pass else "negative control: ") + what)
        names = [x["tensor"] for x in v["checks"]]
        if expect_pass and s["op"] == "mtp" and s["cache_intermediate"]:
            c("intermediate" in names, f"{what}: the cache was checked")
        in_place = name == "flashinfer"  # FLA reads a gathered copy and writes a new tensor
        if expect_pass and in_place and s["op"] != "prefill" and (s["indices"] != "identity" or not s["update_state"]):
            pool = [x for x in v["checks"] if x["tensor"] == "pool"]
            c(bool(pool) and (pool[0]["checked"] > 0), f"{what}: pool slots checked")
        ran += 1
    return ran


def check_reference_store(c):
    """GDN_PEER_REF_CACHE: a second process (here: a fresh ref_cache) of another peer reads the
    reference the first wrote, with the same checks; other inputs (another seed) miss it."""
    import tempfile
    s = sh.normalize(dict(SMALL, op="prefill", seqlens=[9, 4]))

    def verify_with(name, fns, seed):
        peer = peers.PEERS[name]
        loaded = loaded_peer(name, fns)
        plan = peer.plan_point(s, peer.variants["prefill"][0], loaded.caps)
        dist = test_inputs(s["inputs"], s["h_v"], s["l2norm"])
        call = peer.make_call(loaded, s, plan, inputs.make_inputs(s, dist, seed, "cpu"), "cpu")
        return verify_call(call, s, plan_tolerances(s), {}, float(1 << 30), float(1 << 30), 1 << 20)

    hits = []  # the stand-ins walk the token loop themselves: count the store's answers instead
    real, min_seconds = reference_store.load, reference_store.MIN_SECONDS_TO_STORE
    reference_store.MIN_SECONDS_TO_STORE = 0.0  # these references are quick: keep them anyway
    reference_store.load = lambda *a: (lambda r: hits.append(r is not None) or r)(real(*a))
    try:
        with tempfile.TemporaryDirectory() as root:
            os.environ[reference_store.ENV] = root
            first = verify_with("fla", nf.FLA, 11)
            files = os.listdir(root)
            second = verify_with("flashqla", nf.FLASHQLA, 11)
            c(len(files) == 1 and hits == [False, True], f"FLA wrote one entry and FlashQLA read it "
              f"({len(files)} files, store answers {hits})")
            c(first["pass"] and second["pass"] and [x["rel_l2"] for x in first["checks"]] ==
              [x["rel_l2"] for x in second["checks"]], "the stored reference gives the same checks")
            verify_with("fla", nf.FLA, 12)
            c(len(os.listdir(root)) == 2 and hits[-1] is False, "another seed misses the store")
    finally:
        reference_store.load, reference_store.MIN_SECONDS_TO_STORE = real, min_seconds
        os.environ.pop(reference_store.ENV, None)


def main():
    c = Checker()
    check_reference_store(c)
    ran = 0
    for shape in SHAPES:
        ran += run_peer(c, "flashinfer", nf.FLASHINFER, shape)
        ran += run_peer(c, "fla", nf.FLA, shape)
        if shape["op"] == "prefill":
            ran += run_peer(c, "flashqla", nf.FLASHQLA, shape)
    c(ran == 26, f"{ran} peer calls verified (26 expected: 12 FlashInfer, 11 FLA, 3 FlashQLA)")
    nf.OPTIONS["transpose_bug"] = True
    run_peer(c, "flashinfer", nf.FLASHINFER, {"op": "prefill", "seqlens": [12, 5]}, expect_pass=False)
    nf.OPTIONS["transpose_bug"] = False
    print(f"peer numerics: {c.passed} passed, {c.failed} failed")
    return 0 if c.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""CPU tests of the peer harnesses (scripts/peers): the FlashInfer and FlashQLA argument mapping
run on shape-only tensors (peerlib.ops.SpecOps) and handed to fake peer modules (fakes/) that
have the real functions' signatures and argument checks; the skip rules; how FlashInfer and FLA
are imported (the CuTe-DSL path, FLA_DISABLE_BACKEND_DISPATCH). No torch, no GPU.
Prints "N passed, M failed"; exit status 0 only when every check passed."""

import inspect
import json
import os
import subprocess
import sys
import tempfile
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PEERS_DIR = os.path.join(ROOT, "scripts", "peers")
FAKES = os.path.join(HERE, "fakes")
sys.path[:0] = [PEERS_DIR, FAKES]

import flash_qla  # noqa: E402  (the fakes)
import spec_checks  # noqa: E402
from flash_qla.utils import index as qla_index  # noqa: E402
from flashinfer import gdn_decode, gdn_kernels, gdn_prefill  # noqa: E402
from peerlib import flashinfer_load, flashinfer_map, flashinfer_rules, flashqla_map, flashqla_rules  # noqa: E402
from peerlib import ops as po  # noqa: E402
from peerlib import peers  # noqa: E402
from peerlib import shapes as sh  # noqa: E402
from peerlib.selftest import Checker  # noqa: E402

FNS = {
    "flashinfer": {"gated_delta_rule_decode_pretranspose": gdn_decode.gated_delta_rule_decode_pretranspose,
                   "gated_delta_rule_decode": gdn_decode.gated_delta_rule_decode,
                   "gated_delta_rule_mtp": gdn_decode.gated_delta_rule_mtp,
                   "chunk_gated_delta_rule": gdn_prefill.chunk_gated_delta_rule},
    "flashqla": {"chunk_gated_delta_rule": flash_qla.chunk_gated_delta_rule,
                 "prepare_varlen_metadata": qla_index.prepare_varlen_metadata},
}
RULES = {"flashinfer": (flashinfer_rules, flashinfer_map), "flashqla": (flashqla_rules, flashqla_map)}


def call(peer, shape, variant):
    """(plan, mapped, result) with the fake peer; mapped/result None when the rules skip."""
    rules, mapper = RULES[peer]
    s = sh.normalize(shape)
    plan = rules.plan_point(s, variant)
    if plan.skip:
        return plan, None, None
    m = mapper.map_point(s, plan, po.SpecOps(s))
    fn = FNS[peer][m.fn]
    inspect.signature(fn).bind(**m.kwargs)  # every keyword exists in the real signature
    if m.prepare is not None:
        name, *args = m.prepare
        FNS[peer][name](*args)
    return plan, m, fn(**m.kwargs)


def runs_cleanly(c, peer, shape, variant, what):
    """Maps and calls; a ContractError (an argument the real function refuses) is a failure."""
    try:
        plan, m, _ = call(peer, shape, variant)
    except (spec_checks.ContractError, TypeError, AssertionError) as e:
        c(False, f"{what}: {type(e).__name__}: {e}")
        return None, None
    return plan, m


def decode_grid():
    for state in ("f32", "bf16"):
        for layout in ("vk", "kv"):
            for gate in ("log", "raw"):
                for indices, pool in (("identity", 0), ("random", 4 * 33), ("padded", 4 * 33), ("high", 4 * 33)):
                    for idx_dtype in ("i64", "i32"):
                        for batch, heads in ((1, (16, 32)), (33, (4, 8))):
                            yield {"op": "decode", "state_dtype": state, "layout": layout, "gate": gate,
                                   "indices": indices, "pool": pool if batch > 1 else 0, "index_dtype": idx_dtype,
                                   "batch": batch, "h_qk": heads[0], "h_v": heads[1]}


def check_decode(c):
    ran, expected_runs = 0, 0
    for shape in decode_grid():
        s = sh.normalize(shape)
        what = sh.shape_key(s)
        plans = [flashinfer_rules.plan_point(s, v) for v in flashinfer_rules.VARIANTS["decode"]]
        running = [p for p in plans if not p.skip]
        expected = 0 if (s["state_dtype"], s["layout"]) == ("bf16", "kv") else 1
        c(len(running) == expected, f"{what}: {len(running)} FlashInfer decode variants run, {expected} expected")
        expected_runs += expected
        for p in running:
            plan, m = runs_cleanly(c, "flashinfer", shape, p.variant, what)
            ran += m is not None
    c(ran == expected_runs > 0, f"the decode grid made {ran} calls of {expected_runs}")

    # fp32 vk, identity indices over B slots: FlashInfer's `state=` form, in place.
    _, m, _ = call("flashinfer", {"op": "decode", "batch": 8}, "flashinfer/decode_pretranspose")
    c(m.kwargs["state"].origin == "pool" and m.kwargs.get("initial_state") is None, "identity fp32: state= the pool")
    c(m.inplace == ("state",) and m.final.layout == "vk" and m.final.slots is None, "state= form read back by row")
    c(m.kwargs["backend"] == "flashinfer" and m.kwargs["scale"] is None and m.kwargs["use_qk_l2norm"] is True,
      "backend pinned, scale None (K^-1/2), l2norm on")
    c(m.kwargs["output"].shape == (8, 1, 32, 128) and m.kwargs["output"].dtype == "bf16", "caller-owned bf16 output")
    # fp32 vk, scattered slots: the pool form, indices in the point's index dtype, -1 native.
    _, m, _ = call("flashinfer", {"op": "decode", "batch": 16, "pool": 64, "indices": "padded", "index_dtype": "i32",
                                  "scale": 0.125, "l2norm": False}, "flashinfer/decode_pretranspose")
    c(m.kwargs["state"] is None and m.kwargs["initial_state"].shape == (64, 32, 128, 128), "fp32 pool form, P slots")
    c(m.kwargs["initial_state_indices"].dtype == "i32", "indices passed as i32")
    c(m.o_rows is not None and m.o_rows.shape == (14,) and m.final.slots.shape == (14,), "14 of 16 rows verified")
    c(m.untouched == ("initial_state", m.final.slots, False), "unnamed slots checked, no null slot")
    c(m.kwargs["scale"] == 0.125 and m.kwargs["use_qk_l2norm"] is False, "scale and l2norm passed through")
    # bf16 padded: a null slot 0 in front, indices + 1.
    _, m, _ = call("flashinfer", {"op": "decode", "batch": 16, "pool": 64, "indices": "padded",
                                  "state_dtype": "bf16"}, "flashinfer/decode_pretranspose")
    c(m.kwargs["initial_state"].shape[0] == 65 and "null slot" in m.kwargs["initial_state"].origin, "bf16 null slot")
    c("+ 1" in m.kwargs["initial_state_indices"].origin and m.untouched[2] is True, "indices shifted, slot 0 skipped")
    _, m, _ = call("flashinfer", {"op": "decode", "batch": 16, "pool": 64, "indices": "random",
                                  "state_dtype": "bf16"}, "flashinfer/decode_pretranspose")
    c(m.kwargs["initial_state"].shape[0] == 64, "bf16 without padding: the pool as it is")
    # Gates: raw native; log re-expressed and the reference told so.
    _, m, _ = call("flashinfer", {"op": "decode", "batch": 4, "gate": "raw"}, "flashinfer/decode_pretranspose")
    c(m.kwargs["a"].origin == "a" and m.kwargs["A_log"].origin == "A_log" and m.ref_gate is None, "raw gate native")
    _, m, _ = call("flashinfer", {"op": "decode", "batch": 4}, "flashinfer/decode_pretranspose")
    c(m.kwargs["a"].origin == "log(expm1(-g))" and m.kwargs["b"].origin == "logit(beta)"
      and m.kwargs["A_log"].origin == "zeros" and m.ref_gate is not None, "log gate re-expressed, reference told")
    # kv: gated_delta_rule_decode, the pool itself or the gathered valid rows.
    _, m, _ = call("flashinfer", {"op": "decode", "batch": 8, "layout": "kv"}, "flashinfer/decode")
    c(m.kwargs["state"].origin == "pool" and m.final.layout == "kv", "kv identity: the pool in place")
    _, m, _ = call("flashinfer", {"op": "decode", "batch": 16, "pool": 64, "layout": "kv", "indices": "padded",
                                  "gate": "raw"}, "flashinfer/decode")
    c(m.kwargs["state"].shape == (14, 32, 128, 128) and m.kwargs["q"].shape[0] == 14 and m.kwargs["a"].shape[0] == 14,
      "kv scattered: valid rows gathered")
    c(m.o_rows is None and m.final.slots is None, "gathered rows read back in order")


def check_mtp(c):
    for state in ("f32", "bf16"):
        for cache in (False, True):
            for update in (True, False):
                for indices in ("identity", "padded"):
                    shape = {"op": "mtp", "tokens": 4, "batch": 16, "state_dtype": state, "cache_intermediate": cache,
                             "update_state": update, "indices": indices, "pool": 64 if indices == "padded" else 0}
                    variant = "flashinfer/mtp" if state == "f32" else "flashinfer/decode_pretranspose"
                    other = "flashinfer/decode_pretranspose" if state == "f32" else "flashinfer/mtp"
                    what = sh.shape_key(shape)
                    c(flashinfer_rules.plan_point(sh.normalize(shape), other).skip != "", f"{what}: {other} skipped")
                    plan, m = runs_cleanly(c, "flashinfer", shape, variant, what)
                    if m is None:
                        continue
                    c(m.kwargs["disable_state_update"] is (not update), f"{what}: disable_state_update")
                    buf = m.kwargs.get("intermediate_states_buffer")
                    c((buf is not None) == cache, f"{what}: intermediate buffer iff cache")
                    if cache:
                        c(buf.shape == (16, 4, 32, 128, 128) and buf.dtype == state, f"{what}: cache [B, T, HV, V, K]")
                        c(m.intermediate is not None and m.intermediate.layout == "vk", f"{what}: cache read back")
                    c((m.final is None) == (not update), f"{what}: final state iff update")
                    c(m.untouched is not None and (m.untouched[1] is None) == (not update),
                      f"{what}: read-only checks every slot")
    for shape in ({"op": "mtp", "tokens": 4, "batch": 32, "cache_intermediate": True, "rollback": True},
                  {"op": "mtp", "tokens": 4, "batch": 32, "layout": "kv"}):
        s = sh.normalize(shape)
        c(all(flashinfer_rules.plan_point(s, v).skip for v in flashinfer_rules.VARIANTS["mtp"]),
          f"{sh.shape_key(s)}: no FlashInfer variant")


def prefill_grid():
    for heads in ((2, 8), (16, 48), (16, 16)):
        for seqlens in ([64], [100, 37], [4096, 0, 3]):
            for gate in ("log", "raw"):
                for has_h0 in (True, False):
                    for layout in ("vk", "kv"):
                        yield {"op": "prefill", "h_qk": heads[0], "h_v": heads[1], "seqlens": seqlens, "gate": gate,
                               "has_h0": has_h0, "layout": layout}


def check_prefill(c):
    for shape in prefill_grid():
        s = sh.normalize(shape)
        what = sh.shape_key(s)
        plan, m = runs_cleanly(c, "flashinfer", shape, "flashinfer/chunk", f"flashinfer {what}")
        if m is not None:
            h0 = m.kwargs["initial_state"]
            c(h0 is None or (h0.origin == "h0") == (s["layout"] == "vk"), f"{what}: kv h0 passed transposed")
            c(m.kwargs["g"].origin == ("exp(g)" if s["gate"] == "log" else "exp(g_from_raw)"), f"{what}: alpha = exp(g)")
            c(m.kwargs["max_seqlen"] == max(s["seqlens"]) and type(m.kwargs["max_seqlen"]) is int, f"{what}: max_seqlen")
            c(m.kwargs["cu_seqlens"].dtype == "i32" and m.kwargs["use_cp"] == "auto", f"{what}: cu_seqlens, use_cp")
            c((m.kwargs["initial_state"] is not None) == s["has_h0"] and m.kwargs["output_final_state"] is True,
              f"{what}: h0 and final state")
            c(m.final.where.key == "output_state" and m.final.layout == "vk", f"{what}: ht read from output_state")
        plan, m = runs_cleanly(c, "flashqla", shape, "flashqla/chunk", f"flashqla {what}")
        if m is not None:
            c(m.kwargs["state_v_first"] is (s["layout"] == "vk"), f"{what}: state_v_first per layout")
            c(m.kwargs["q"].shape[0] == 1 and m.kwargs["g"].shape == (1, sum(s["seqlens"]), s["h_v"]), f"{what}: B = 1")
            c(m.kwargs["g"].origin == ("g" if s["gate"] == "log" else "g_from_raw"), f"{what}: log-space g")
            c(m.kwargs["cu_seqlens"].dtype == "i64" and m.kwargs["auto_cp"] is True, f"{what}: cu_seqlens, auto_cp")
            c(m.final.layout == s["layout"] and m.o.kind == "result", f"{what}: results returned")
    last = spec_checks.CALLS[-2:]
    c([n for n, _ in last] == ["prepare_varlen_metadata", "chunk_gated_delta_rule"], "FlashQLA's varlen metadata first")
    for shape, peer, variant, word in (({"op": "prefill", "seqlens": [64], "dk": 256, "dv": 256}, "flashinfer",
                                        "flashinfer/chunk", "128"),
                                       ({"op": "prefill", "seqlens": [64], "dk": 64, "dv": 128}, "flashinfer",
                                        "flashinfer/chunk", "one head size"),
                                       ({"op": "prefill", "seqlens": [64], "dk": 64, "dv": 64}, "flashqla",
                                        "flashqla/chunk", "128"),
                                       ({"op": "decode"}, "flashqla", "flashqla/chunk", "prefill only"),
                                       ({"op": "prefill", "seqlens": [64], "input_dtype": "f32"}, "flashinfer",
                                        "flashinfer/chunk", "bf16")):
        plan, m, _ = call(peer, shape, variant)
        c(m is None and word in plan.skip, f"{peer} skips {shape} ({plan.skip})")
    _, m, _ = call("flashinfer", {"op": "prefill", "seqlens": [64], "dk": 64, "dv": 64}, "flashinfer/chunk")
    c(m is not None, "FlashInfer runs head size 64")


def check_caps_and_loading(c):
    s = sh.normalize({"op": "decode", "state_dtype": "bf16"})
    caps = {("flashinfer/decode_pretranspose", "bf16"): "bf16 kernel missing"}
    c(flashinfer_rules.plan_point(s, "flashinfer/decode_pretranspose", caps).skip == "bf16 kernel missing",
      "a missing bf16 kernel skips bf16 points")
    s32 = sh.normalize({"op": "decode"})
    c(not flashinfer_rules.plan_point(s32, "flashinfer/decode_pretranspose", caps).skip, "... and not fp32 ones")
    c("kv" in flashinfer_rules.plan_point(sh.normalize({"op": "decode", "layout": "kv"}),
                                          "flashinfer/decode_pretranspose", caps).skip, "the rules' reason comes first")
    fine = flashinfer_load.missing_kernels(gdn_kernels, gdn_decode, 9)
    c(fine == {}, f"every kernel of the fake is there ({fine})")
    broken = SimpleNamespace(**{k: getattr(gdn_kernels, k) for k in dir(gdn_kernels) if not k.startswith("__")})
    broken.run_mtp_decode = None
    missing = flashinfer_load.missing_kernels(broken, gdn_decode, 9)
    c(set(missing) == {"flashinfer/mtp"} and "dsl_packages" in missing["flashinfer/mtp"], "a None kernel is a reason")
    c("sm_8" in flashinfer_load.missing_kernels(gdn_kernels, gdn_decode, 8).get("flashinfer/chunk", ""),
      "no prefill kernel before sm_90")
    with tempfile.TemporaryDirectory() as site:
        os.makedirs(os.path.join(site, flashinfer_load.DSL_PACKAGES))
        path = [site, "/nonexistent"]
        flashinfer_load.add_cutlass_dsl_path(path)
        flashinfer_load.add_cutlass_dsl_path(path)
        c(path == [site, "/nonexistent", os.path.join(site, flashinfer_load.DSL_PACKAGES)],
          f"cutlass DSL packages appended once ({path})")


def check_fla_dispatch(c):
    """The FLA harness imports FLA with FLA_DISABLE_BACKEND_DISPATCH=1, whatever the caller set."""
    code = ("import sys; sys.path[:0] = [{!r}, {!r}]\n"
            "from peerlib import fla_load; ns = fla_load.load_fla(); import fla\n"
            "print(fla.DISPATCH_ENV_AT_IMPORT, ns.dispatch, ns.harness['fla_backend_dispatch'])").format(PEERS_DIR, FAKES)
    for preset in (None, "0"):
        env = {k: v for k, v in os.environ.items() if k != "FLA_DISABLE_BACKEND_DISPATCH"}
        if preset is not None:
            env["FLA_DISABLE_BACKEND_DISPATCH"] = preset
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        c(r.returncode == 0 and r.stdout.split()[:2] == ["1", "False"] and "off" in r.stdout,
          f"FLA imported with dispatch off (caller set {preset}): {r.stdout.strip()} {r.stderr.strip()[-300:]}")


def check_every_variant_maps(c):
    for name in ("flashinfer", "flashqla"):
        peer = peers.PEERS[name]
        rules, mapper = RULES[name]
        for op, variants in peer.variants.items():
            for v in variants:
                fn = rules.FUNCTIONS[v]
                c(fn in FNS[name], f"{v}: {fn} is a function of the fake {name}")
                c(name == "flashqla" or (op, v) in mapper.BUILDERS, f"{v}: a builder for {op}")


def check_list(c):
    """--list on a small plan names the function each point runs, and the skip reasons."""
    points = []
    for i, shape in enumerate(({"op": "decode", "batch": 32}, {"op": "decode", "batch": 32, "layout": "kv"},
                               {"op": "mtp", "batch": 32, "tokens": 4, "cache_intermediate": True},
                               {"op": "prefill", "seqlens": [4096, 4096]})):
        s = sh.normalize(shape)
        points.append({"case": f"c{i}", "op": s["op"], "seed": i, "shape": s, "shape_key": sh.shape_key(s)})
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"config": {"path": "t.yaml", "hash": "0"}, "points": points}, f)
    try:
        for script, words in (("flashinfer_peer.py", ["run gated_delta_rule_decode_pretranspose",
                                                      "run gated_delta_rule_decode", "run gated_delta_rule_mtp",
                                                      "run chunk_gated_delta_rule"]),
                              ("flashqla_peer.py", ["run chunk_gated_delta_rule", "no flashqla variant for decode"])):
            r = subprocess.run([sys.executable, os.path.join(PEERS_DIR, script), "--list", "--plan", f.name],
                               capture_output=True, text=True)
            c(r.returncode == 0 and all(w in r.stdout for w in words), f"{script} --list: {r.stdout[-400:]} {r.stderr}")
    finally:
        os.unlink(f.name)


def check_plan_points(c):
    """A point with a non-default plan (the `plan` axis: our variants' knobs) is nothing a peer
    runs: the harness leaves it out, and keys it like gdnbench (" plan=..." last) when asked."""
    from peerlib import cli
    plain = sh.normalize({"op": "decode", "batch": 32})
    knobbed = dict(plain, plan="kernel=mma")
    c(sh.shape_key(knobbed) == sh.shape_key(plain) + " plan=kernel=mma", f"plan key: {sh.shape_key(knobbed)}")
    points = [{"case": "c", "op": "decode", "seed": 0, "shape": s, "shape_key": sh.shape_key(s)} for s in (plain, knobbed)]
    args = SimpleNamespace(ops=["decode"], cases=None, first=0, count=0)
    picked = [p["shape_key"] for p in cli.selected_points(args, {"points": points})]
    c(picked == [sh.shape_key(plain)], f"only the default-plan point is run: {picked}")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"config": {"path": "t.yaml", "hash": "0"}, "points": points}, f)
    try:
        r = subprocess.run([sys.executable, os.path.join(PEERS_DIR, "flashinfer_peer.py"), "--list", "--plan", f.name],
                           capture_output=True, text=True)
        c(r.returncode == 0 and "plan=" not in r.stdout and sh.shape_key(plain) in r.stdout,
          f"--list leaves the plan point out: {r.stdout[-400:]} {r.stderr}")
    finally:
        os.unlink(f.name)


def check_resume_reverifies(c):
    """--resume keeps finished records, but not one left unverified for its length that the
    current --verify-max-steps covers (it runs again, verified)."""
    from peerlib import cli
    from peerlib.peers import PEERS
    peer = PEERS["fla"]
    long_case = {"case": "a", "status": "ok", "verification": {"scope": "not verified: too large (32768 steps > 16384)"}}
    huge_case = {"case": "b", "status": "ok", "verification": {"scope": "not verified: too large (65536 steps > 16384)"}}
    work_case = {"case": "c", "status": "ok", "verification": {"scope": "not verified: too large (123 state-update work)"}}
    done_case = {"case": "d", "status": "ok", "verification": {"scope": "full", "ran": True, "pass": True}}
    error_case = {"case": "e", "status": "error", "verification": {"scope": "full"}}
    c(cli.verifiable_now(long_case, 32768) and not cli.verifiable_now(long_case, 16384), "32768 steps: verifiable at 32768")
    c(not cli.verifiable_now(huge_case, 32768) and not cli.verifiable_now(work_case, 32768)
      and not cli.verifiable_now(done_case, 32768), "too long, too much work or verified: kept")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"tool": {"name": peer.name, "version": "1"}, "mode": "cold",
                   "devices": [{"index": 0, "name": "GPU A", "uuid": "GPU-a"}],
                   "cases": [long_case, huge_case, work_case, done_case, error_case]}, f)
    try:
        old = cli.resumable_report(peer, f.name, "1", "cold")
        kept = [x["case"] for x in cli.previous_cases(old, 32768)]
        c(kept == ["b", "c", "d"], f"kept on resume at 32768 steps: {kept}")
        kept = [x["case"] for x in cli.previous_cases(old)]
        c(kept == ["a", "b", "c", "d"], f"kept without a step limit: {kept}")
        ignored = cli.resumable_report(peer, f.name, "1", "graph")
        c(cli.previous_cases(ignored, 32768) == [], "another mode: nothing kept")
        here = [{"index": 0, "name": "GPU B", "uuid": "GPU-b"}]
        c([d["uuid"] for d in cli.merged_devices(here, old)] == ["GPU-b", "GPU-a"],
          "resumed on another machine: both devices listed, this one first")
        c([d["uuid"] for d in cli.merged_devices([{"uuid": "GPU-a"}], old)] == ["GPU-a"],
          "resumed on the same machine: listed once")
        c([d["uuid"] for d in cli.merged_devices(here, ignored)] == ["GPU-b"],
          "a report --resume ignores adds no device")
    finally:
        os.unlink(f.name)


def main():
    c = Checker()
    for part in (check_decode, check_mtp, check_prefill, check_caps_and_loading, check_fla_dispatch,
                 check_every_variant_maps, check_list, check_plan_points, check_resume_reverifies):
        part(c)
    print(f"peer mapping: {c.passed} passed, {c.failed} failed")
    return 0 if c.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

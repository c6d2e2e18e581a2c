"""One verification path for every peer: restore what the call overwrites, run the reference on
the rows the peer ran, call the peer once, and compare o, the final state (ht or pool slots), the
mtp cache and the pool slots no row names, with docs/method.md 4's metrics and tolerances."""

import time

import torch

from . import reference
from . import reference_store
from . import report as rp
from . import shapes as sh


# Sequences longer than this are checked against the chunked form of the reference.
CHUNKED_FROM_STEPS = 256


def verify_call(call, s, tolerances, ref_cache, max_work, max_sampled_work, max_steps):
    """The verification block of one record. tolerances: the plan point's. ref_cache: {key: (o,
    state)} shared by the variants of one point (the reference is the same unless the peer got a
    re-expressed gate)."""
    t0 = time.monotonic()
    call.reset()  # in-place peers: the inputs as drawn, for the reference and the call
    ri = call.reference_inputs()
    cu = ri["cu"]
    steps = max(cu[i + 1] - cu[i] for i in range(len(cu) - 1))
    hv, kv = s["h_v"], s["dk"] * s["dv"]
    tokens = cu[-1]
    sample = reference.sample_heads(hv)
    if steps > max_steps:
        return rp.verification_json(scope=f"not verified: too large ({steps} steps > {max_steps})")
    if tokens * hv * kv <= max_work:
        heads, scope = list(range(hv)), "full"
    elif tokens * len(sample) * kv <= max_sampled_work:
        heads = sample
        scope = f"value heads {','.join(map(str, heads))} of all {len(cu) - 1} sequences"
    else:
        return rp.verification_json(scope=f"not verified: too large ({tokens * hv * kv} state-update work)")
    if s["op"] != "prefill" and s["indices"] == "padded":
        scope += f" (the {len(cu) - 1} valid rows)"
    out = call.outputs(call())
    if out["o"].is_cuda:
        torch.cuda.synchronize()
    hsel = torch.tensor(heads, device=out["o"].device)
    tol = sh.peer_tolerances(tolerances)
    steps_check = None
    if out["intermediate"] is not None:
        steps_check = reference.StepCheck(out["intermediate"].index_select(2, hsel))
    key = (tuple(heads), getattr(call, "ref_key", ""))
    if key not in ref_cache or steps_check is not None:
        # Where the disk store (reference_store.py) keeps this reference, found by the same inputs
        # the reference reads; the intermediate-cache check walks the steps itself: never stored.
        stored = None if steps_check is not None else reference_store.entry_path(sh.shape_key(s), heads, key[1], ri)
        hit = reference_store.load(stored, out["o"].device)
        if hit is None:
            started = time.monotonic()
            args = (ri["q"], ri["k"], ri["v"], ri["g"], ri["beta"], cu, ri["h0_kv"], sh.effective_scale(s), s["l2norm"],
                    heads, s["h_v"] // s["h_qk"])
            # Long sequences by chunks (the same fp64 result to about 1e-12, 64 times fewer steps);
            # the per-step check of the mtp cache needs the token loop.
            if steps_check is None and steps > CHUNKED_FROM_STEPS:
                hit = reference.chunked(*args)
            else:
                hit = reference.recurrent(*args, on_step=steps_check)
            if time.monotonic() - started >= reference_store.MIN_SECONDS_TO_STORE:
                reference_store.save(stored, *hit)
        ref_cache[key] = hit
    ref_o, ref_state = ref_cache[key]
    checks = [reference.check("o", out["o"].index_select(1, hsel), ref_o, tol["o"])]
    name = "ht" if s["op"] == "prefill" else "pool"
    if out["final"] is not None:
        checks.append(reference.check(name, out["final"].index_select(1, hsel), ref_state, tol[name]))
    elif out["untouched_diff"] is not None:
        checks.append({"tensor": name, "rel_l2": float("nan"), "max_abs": float("nan"), "tolerance": 0.0,
                       "checked": 0, "nonfinite": 0, "passed": True})  # read-only: the slots must not move
    if out["untouched_diff"] is not None:
        pool = checks[-1]
        pool["untouched_diff"] = out["untouched_diff"]
        pool["checked"] += out["untouched_checked"]
        pool["passed"] = pool["passed"] and out["untouched_diff"] == 0
    if steps_check is not None:
        checks.append(steps_check.result("intermediate", tol["intermediate"]))
    checks = [rp.check_json(c["tensor"], c["rel_l2"], c["max_abs"], c["tolerance"], c["checked"], c["nonfinite"],
                            c["passed"], c.get("untouched_diff", 0)) for c in checks]
    return rp.verification_json(True, all(c["pass"] for c in checks), scope, time.monotonic() - t0, checks)

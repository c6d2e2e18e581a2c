"""Which points a user's kernel function runs, under which convention, and what differs from
gdnbench's own variants (pure Python: kernel_peer.py --list needs no torch).

Two conventions (docs/python-kernels.md):
- "fla": the function is called exactly as FLA's fused_recurrent_gated_delta_rule /
  chunk_gated_delta_rule are (peerlib/fla_calls.py): a dense initial_state and a returned final
  state, varlen prefill through cu_seqlens. What the convention cannot express is skipped.
- "gdnbench": the function gets gdnbench's own tensors in a dict and updates the state pool in
  place, as gdnbench's variants do; only points whose inputs the harness does not draw are skipped.
Then the function's own gdnbench_supports(shape), when it has one."""

from . import fla_support
from .plan import Plan

RAW_GATE_ARGS = {"use_gate_in_kernel", "A_log", "dt_bias", "use_beta_sigmoid_in_kernel"}


def _accepts(kernel, name):
    """Whether the function takes keyword `name` (a function with **kwargs takes every name)."""
    return kernel.accepts is None or name in kernel.accepts


def _fla_rules(s, p, kernel):
    """The FLA convention's limits, as for FLA itself (fla_support.py), minus FLA's own ones."""
    if s["layout"] == "vk":
        if not _accepts(kernel, "state_v_first"):
            return "vk states need the state_v_first argument of FLA's convention; the function has none"
        p.notes.append("vk layout through state_v_first=True")
    if s["op"] == "prefill":
        if s.get("pool", 0) > 0:
            return "the prefill pool form (states in a pool named by indices): FLA's convention takes dense " \
                   "initial states (--convention gdnbench has the pool)"
        if not _accepts(kernel, "cu_seqlens"):
            return "varlen prefill needs the cu_seqlens argument of FLA's convention; the function has none"
        p.notes.append("varlen: B=1 packed with cu_seqlens (int64)")
    else:
        if s["op"] == "mtp" and s["cache_intermediate"]:
            return "FLA's convention has no intermediate-state output (cache_intermediate; --convention " \
                   "gdnbench has the cache)"
        fla_support.dense_state_notes(s, p, "the function (FLA's convention)")
    if s["gate"] == "raw":
        if all(_accepts(kernel, a) for a in RAW_GATE_ARGS):
            p.raw_gate_in_kernel = True
            p.notes.append("raw gate passed as FLA's use_gate_in_kernel / use_beta_sigmoid_in_kernel with A_log, "
                           "dt_bias, a as g and b as beta")
        else:
            p.notes.append("raw gate: the function has no use_gate_in_kernel; g and beta are computed with torch "
                           "outside the timed region")
            p.differences.append("raw gate computed outside timing")
    return ""


def _gdnbench_rules(s, p):
    if s["op"] == "prefill" and s.get("pool", 0) > 0:
        return "the prefill pool form (states in a pool named by indices) is not drawn by the Python harness"
    if s["op"] == "mtp" and s["rollback"]:
        return "rollback points (a start state per accepted prefix) are not drawn by the Python harness"
    if s["op"] != "prefill":
        p.notes.append("the state pool is updated in place at the rows' slots, as by gdnbench's variants")
    return ""


def plan_point(s, variant, kernel):
    """How (or whether) the user's function runs this normalized shape. kernel: kernel_load's
    namespace (accepts, supports, convention, module, function)."""
    p = Plan(variant, function=f"{kernel.module}.{kernel.function}")
    reason = _fla_rules(s, p, kernel) if kernel.convention == "fla" else _gdnbench_rules(s, p)
    if not reason and kernel.supports is not None:
        try:
            declined = kernel.supports(dict(s))
        except Exception as e:  # noqa: BLE001 - the user's code: its failure is this point's reason
            declined = None
            reason = f"the function's gdnbench_supports raised {type(e).__name__}: {e}"
        if declined:
            reason = f"the function declines: {declined}"
    p.skip = reason
    return p

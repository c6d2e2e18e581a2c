"""Which FLA call stands in for which gdnbench point, and what differs (pure Python).

FLA's API has no state pool: fused_recurrent_gated_delta_rule takes a dense initial_state
[N, HV, K, V] (or [N, HV, V, K] with state_v_first) and returns a new final state. The harness
therefore gathers the named pool slots outside the timed region; the bytes moved by the kernel
(B states read, B written) are the same as gdnbench's in-place update. Everything FLA cannot do
is skipped with the reason, never approximated silently."""

import inspect
from dataclasses import dataclass, field

from .plan import Plan  # noqa: F401 - re-exported: the FLA harness's plans

VARIANTS = {
    "prefill": ["fla/chunk", "fla/fused_recurrent"],
    "decode": ["fla/fused_recurrent"],
    "mtp": ["fla/fused_recurrent"],
}

CHUNK_MAX_K = 256  # fla/ops/common/chunk_delta_h.py asserts K <= 256


@dataclass
class Caps:
    """Keyword arguments the installed FLA accepts (defaults: what FLA 0.6.0 has)."""
    recurrent: set = field(default_factory=lambda: {
        "state_v_first", "use_gate_in_kernel", "A_log", "dt_bias", "use_beta_sigmoid_in_kernel", "cu_seqlens"})
    chunk: set = field(default_factory=lambda: {
        "state_v_first", "use_beta_sigmoid_in_kernel", "cu_seqlens", "cu_seqlens_cpu", "chunk_indices"})
    # chunk_gated_delta_rule takes use_gate_in_kernel / A_log / dt_bias through **kwargs in 0.6.0.
    chunk_gate_in_kernel: bool = True


def probe_caps(recurrent_fn, chunk_fn):
    """Caps of the installed FLA from its signatures (functools.wraps exposes the originals)."""
    def params(fn):
        try:
            return set(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            return set()
    caps = Caps(recurrent=params(recurrent_fn), chunk=params(chunk_fn))
    # The chunk gate arguments hide in **kwargs; FLA added them together with the recurrent ones.
    try:
        src = inspect.getsource(inspect.unwrap(chunk_fn))
    except (OSError, TypeError):
        src = ""
    caps.chunk_gate_in_kernel = "use_gate_in_kernel" in caps.chunk or "use_gate_in_kernel" in src
    return caps


def _raw_gate(s, variant, caps, p):
    if s["gate"] != "raw":
        return
    if variant == "fla/chunk":
        ok = caps.chunk_gate_in_kernel and "use_beta_sigmoid_in_kernel" in caps.chunk
    else:
        ok = {"use_gate_in_kernel", "A_log", "dt_bias", "use_beta_sigmoid_in_kernel"} <= caps.recurrent
    if ok:
        p.raw_gate_in_kernel = True
        p.notes.append("raw gate fused in FLA's kernels (use_gate_in_kernel, use_beta_sigmoid_in_kernel)")
    else:
        p.notes.append("raw gate: this FLA has no in-kernel gate; g and beta are computed with torch "
                       "outside the timed region (FLA is timed on the log form)")
        p.differences.append("raw gate computed outside timing")


def plan_point(shape, variant, caps=None):
    """How (or whether) FLA runs this normalized gdnbench shape as `variant`."""
    caps = caps or Caps()
    s = shape
    p = Plan(variant)
    names = caps.chunk if variant == "fla/chunk" else caps.recurrent
    if s["input_dtype"] not in ("bf16", "f16"):
        p.skip = f"FLA is run with bf16/f16 inputs only (got {s['input_dtype']})"
        return p
    if s["layout"] == "vk":
        if "state_v_first" not in names:
            p.skip = "this FLA has only the kv state layout (no state_v_first)"
            return p
        p.notes.append("vk layout through state_v_first=True")
    if variant == "fla/chunk" and max(s["dk"], s["dv"]) > CHUNK_MAX_K:
        p.skip = f"FLA's chunk kernels support head dims up to {CHUNK_MAX_K} (got {s['dk']}x{s['dv']})"
        return p
    if s["op"] == "prefill":
        if s.get("pool", 0) > 0:
            p.skip = "the pool form (a state pool named by indices): FLA's prefill takes dense initial states only"
            return p
        if "cu_seqlens" not in names:
            p.skip = "this FLA takes no cu_seqlens"
            return p
        p.notes.append("varlen: B=1 packed with cu_seqlens (int64)")
        if variant == "fla/chunk" and {"chunk_indices", "cu_seqlens_cpu"} <= names:
            p.notes.append("chunk_indices and cu_seqlens_cpu precomputed outside the timed region")
        _raw_gate(s, variant, caps, p)
        return p

    # decode / mtp
    if s["state_dtype"] != "f32":
        p.skip = ("FLA keeps fp32 states: fused_recurrent_gated_delta_rule always writes an fp32 "
                  "final state, so a bf16 pool has no FLA equivalent")
        return p
    if s["op"] == "mtp" and s["cache_intermediate"]:
        p.skip = "FLA's fused_recurrent_gated_delta_rule has no intermediate-state output (cache_intermediate)"
        return p
    dense_state_notes(s, p)
    _raw_gate(s, variant, caps, p)
    return p


def dense_state_notes(s, p, who="FLA"):
    """What a decode/mtp point run through FLA's dense-state call differs in (FLA, and any
    function called in its convention: kernel_rules.py)."""
    p.notes.append(f"pool: {who} has no in-place state pool; the named slots are gathered into a dense "
                   f"initial_state outside the timed region and {who} writes a new final-state tensor "
                   "(same bytes: B states read, B written)")
    p.differences.append("pool slots gathered outside timing, final state to a new tensor")
    if s["indices"] == "padded":
        p.notes.append(f"padding rows (index -1) dropped before the call: {who} runs the valid rows only")
        p.differences.append("padding rows dropped")
    if s["op"] == "mtp" and not s["update_state"]:
        p.notes.append("update_state off: output_final_state=False (no state written)")

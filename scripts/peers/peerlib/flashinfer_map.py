"""The arguments of each FlashInfer call for a gdnbench point (see flashinfer_rules for which
function and why). Built through peerlib.ops: the CPU tests run this code on SpecTensors."""

from . import flashinfer_rules as rules
from .mapping import Mapped, Result, StateOut


def _scale(s):
    return s["scale"] if s["scale"] > 0 else None


def _gate(s, ops):
    """A_log, a, dt_bias, b: the point's raw gate, or its log gate re-expressed as one."""
    return {n: ops.input(n) for n in ("A_log", "a", "dt_bias", "b")} if s["gate"] == "raw" else ops.raw_from_log()


def _ref_gate(s, gate):
    """The reference must see the gate the peer saw: None when that is the point's own."""
    return None if s["gate"] == "raw" else gate


def _output(s, ops, rows):
    steps = s["tokens"] if s["op"] == "mtp" else 1
    return ops.empty((rows, steps, s["h_v"], s["dv"]), "bf16", "output")


def _pool_and_indices(s, ops, null_slot):
    """(pool, indices as passed, slots of the valid rows in the passed pool, valid rows)."""
    pool, idx64 = ops.input("pool"), ops.input("indices")
    idx = ops.cast(idx64, s["index_dtype"])
    if null_slot:
        pool, idx = ops.with_null_slot(pool, idx)
    valid = ops.valid_rows()
    slots = ops.select_rows(ops.cast(idx, "i64"), valid)
    return pool, idx, slots, valid


def _pool_call(s, ops, fn, extra):
    """The in-place pool form shared by the pretranspose (pool) and MTP calls."""
    null_slot = s["state_dtype"] == "bf16" and s["indices"] == "padded"
    pool, idx, slots, valid = _pool_and_indices(s, ops, null_slot)
    gate = _gate(s, ops)
    kw = dict(q=ops.input("q"), k=ops.input("k"), v=ops.input("v"), initial_state=pool, initial_state_indices=idx,
              **gate, scale=_scale(s), output=_output(s, ops, s["batch"]), use_qk_l2norm=bool(s["l2norm"]), **extra)
    writes = s["op"] == "decode" or s["update_state"]
    m = Mapped(fn, kw, o_rows=valid, inplace=("initial_state",), ref_gate=_ref_gate(s, gate),
               final=StateOut(Result("kwarg", "initial_state"), "vk", slots) if writes else None,
               # Read-only (update off): every slot must come back bit-identical.
               untouched=("initial_state", slots if writes else None, null_slot))
    if s["op"] == "mtp" and s["cache_intermediate"]:
        cache = ops.zeros((s["batch"], s["tokens"], s["h_v"], s["dv"], s["dk"]), s["state_dtype"], "intermediate")
        m.kwargs["intermediate_states_buffer"] = cache
        m.inplace += ("intermediate_states_buffer",)
        m.intermediate = StateOut(Result("kwarg", "intermediate_states_buffer"), "vk", valid)
    return m


def _decode_pretranspose(s, ops):
    fn = rules.FUNCTIONS["flashinfer/decode_pretranspose"]
    extra = {"backend": "flashinfer"}
    if s["op"] == "mtp":
        extra["disable_state_update"] = not s["update_state"]
    if s["op"] == "decode" and rules.uses_state_argument(s):
        gate = _gate(s, ops)
        kw = dict(q=ops.input("q"), k=ops.input("k"), v=ops.input("v"), state=ops.input("pool"), **gate,
                  scale=_scale(s), output=_output(s, ops, s["batch"]), use_qk_l2norm=bool(s["l2norm"]), **extra)
        return Mapped(fn, kw, inplace=("state",), final=StateOut(Result("kwarg", "state"), "vk"),
                      ref_gate=_ref_gate(s, gate))
    return _pool_call(s, ops, fn, dict(state=None, **extra))


def _decode_kv(s, ops):
    fn = rules.FUNCTIONS["flashinfer/decode"]
    pool = ops.input("pool")
    if s["indices"] == "identity" and s["pool"] in (0, s["batch"]):
        rows, state, n = None, pool, s["batch"]
    else:
        rows = ops.valid_rows()
        state = ops.select_rows(pool, ops.select_rows(ops.input("indices"), rows))  # gathered: a dense copy
        n = rows.shape[0]
    pick = (lambda x: x) if rows is None else (lambda x: ops.select_rows(x, rows))
    gate = _gate(s, ops)
    run_gate = dict(gate, a=pick(gate["a"]), b=pick(gate["b"]))
    kw = dict(q=pick(ops.input("q")), k=pick(ops.input("k")), v=pick(ops.input("v")), state=state, **run_gate,
              scale=_scale(s), output=_output(s, ops, n), use_qk_l2norm=bool(s["l2norm"]), backend="flashinfer")
    # The rows run are the valid rows in order: o needs no row selection, state row i = valid row i.
    return Mapped(fn, kw, inplace=("state",), final=StateOut(Result("kwarg", "state"), "kv"),
                  ref_gate=_ref_gate(s, gate))


def _mtp(s, ops):
    return _pool_call(s, ops, rules.FUNCTIONS["flashinfer/mtp"], {"disable_state_update": not s["update_state"]})


def _h0_vk(s, ops):
    """h0 as FlashInfer's prefill reads it, [N, HV, V, K]: a kv point's h0 transposed (a copy)."""
    if not s["has_h0"]:
        return None
    h0 = ops.input("h0")
    return h0 if s["layout"] == "vk" else ops.transpose_state(h0)


def _prefill(s, ops):
    if s["gate"] == "log":
        g, beta = ops.input("g"), ops.input("beta")
    else:
        g, beta = ops.gate_from_raw()
    cu = ops.input("cu_seqlens")
    tokens, n, hv = cu[-1], len(cu) - 1, s["h_v"]
    kw = dict(q=ops.input("q"), k=ops.input("k"), v=ops.input("v"), g=ops.exp(g), beta=beta, scale=_scale(s),
              initial_state=_h0_vk(s, ops), output_final_state=True,
              cu_seqlens=ops.device_ints(cu, "i32", "cu_seqlens"), use_qk_l2norm_in_kernel=bool(s["l2norm"]),
              output=ops.empty((tokens, hv, s["dv"]), s["input_dtype"], "output"),
              output_state=ops.empty((n, hv, s["dv"], s["dk"]), "f32", "output_state"),
              use_cp="auto", max_seqlen=max(s["seqlens"]))
    return Mapped(rules.FUNCTIONS["flashinfer/chunk"], kw, final=StateOut(Result("kwarg", "output_state"), "vk"))


BUILDERS = {
    ("prefill", "flashinfer/chunk"): _prefill,
    ("decode", "flashinfer/decode_pretranspose"): _decode_pretranspose,
    ("decode", "flashinfer/decode"): _decode_kv,
    ("mtp", "flashinfer/mtp"): _mtp,
    ("mtp", "flashinfer/decode_pretranspose"): _decode_pretranspose,
}


def map_point(s, plan, ops):
    """The Mapped call of a runnable plan (plan.skip empty)."""
    assert not plan.skip, plan.skip
    return BUILDERS[(s["op"], plan.variant)](s, ops)

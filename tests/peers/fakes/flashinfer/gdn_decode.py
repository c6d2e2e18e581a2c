"""Fake flashinfer.gdn_decode: 0.7.2.post1's signatures and argument checks (gdn_decode.py)."""
from spec_checks import ContractError, dtype_in, need, record, shape_is
from peerlib.ops import SpecTensor

_GDN_DECODE_BF16_STATE_AVAILABLE = True
HALF = ("bf16", "f16")
IDX = ("i32", "i64")


def _gate(a, b, A_log, dt_bias, B, T, HV):
    dtype_in(A_log, ("f32",), "A_log")
    shape_is(A_log, (HV,), "A_log")
    dtype_in(dt_bias, ("bf16", "f32"), "dt_bias")
    shape_is(dt_bias, (HV,), "dt_bias")
    for name, x in (("a", a), ("b", b)):
        dtype_in(x, HALF, name)
        shape_is(x, (B, T, HV), name)


def _qkv(q, k, v):
    need(len(q.shape) == 4 and len(v.shape) == 4, "q [B, T, H, K], v [B, T, HV, V]")
    B, T, H, K = q.shape
    shape_is(k, q.shape, "k")
    need(v.shape[:2] == (B, T), "v [B, T, HV, V]")
    dtype_in(q, HALF, "q")
    need(k.dtype == q.dtype == v.dtype, "q, k, v dtypes")
    return B, T, H, K, v.shape[2], v.shape[3]


def _output(output, B, T, HV, V):
    if output is not None:
        shape_is(output, (B, T, HV, V), "output")
        dtype_in(output, ("bf16",), "output (the kernels write bf16)")
    return output if output is not None else SpecTensor((B, T, HV, V), "bf16", "allocated output")


def gated_delta_rule_decode_pretranspose(q, k, v, state, A_log, a, dt_bias, b, scale=None, output=None,
                                         use_qk_l2norm=True, initial_state=None, initial_state_indices=None,
                                         output_state_indices=None, intermediate_states_buffer=None,
                                         disable_state_update=False, backend="auto"):
    record("gated_delta_rule_decode_pretranspose", locals())
    B, T, H, K, HV, V = _qkv(q, k, v)
    need(not (T == 1 and intermediate_states_buffer is not None), "intermediate_states_buffer needs T > 1")
    need(not (T == 1 and disable_state_update), "disable_state_update needs T > 1")
    use_pool = initial_state is not None
    need(use_pool == (initial_state_indices is not None), "initial_state and initial_state_indices together")
    need(backend in ("auto", "flashinfer", "cake_gdn", "rubin"), f"backend {backend!r}")
    if use_pool:
        need(state is None, "state with a pool")
        shape_is(initial_state, (initial_state.shape[0], HV, V, K), "initial_state [pool, HV, V, K]")
        shape_is(initial_state_indices, (B,), "initial_state_indices [B]")
        dtype_in(initial_state_indices, IDX, "initial_state_indices")
    else:
        shape_is(state, (B, HV, V, K), "state [B, HV, V, K]")
    st = initial_state if use_pool else state
    _gate(a, b, A_log, dt_bias, B, T, HV)
    if st.dtype == "bf16" and K == 128 and V == 128:
        if intermediate_states_buffer is not None:
            need(intermediate_states_buffer.dtype == "bf16", "intermediate dtype = state dtype")
            need(intermediate_states_buffer.shape[0] == B and intermediate_states_buffer.shape[1] >= T
                 and intermediate_states_buffer.shape[2:] == (HV, V, K), "intermediate [B, >=T, HV, V, K]")
    else:
        dtype_in(st, ("f32",), "legacy path state")
        if T > 1:
            need(use_pool, "fp32 T > 1 needs the pool form")
        else:
            need(K >= 128 and V >= 128 and V % 8 == 0, "K, V >= 128, V % 8")
    return _output(output, B, T, HV, V), st


def gated_delta_rule_decode(q, k, v, state, A_log, a, dt_bias, b, scale=None, output=None, use_qk_l2norm=True,
                            backend="auto"):
    record("gated_delta_rule_decode", locals())
    B, T, H, K, HV, V = _qkv(q, k, v)
    need(T == 1, "decode T = 1")
    shape_is(state, (B, HV, K, V), "state [B, HV, K, V]")
    dtype_in(state, ("f32",), "state")
    need(K >= 128 and V >= 128 and V % 32 == 0, "K, V >= 128, V % 32")
    need(backend in ("auto", "flashinfer", "cake_gdn"), f"backend {backend!r}")
    _gate(a, b, A_log, dt_bias, B, T, HV)
    return _output(output, B, T, HV, V), state


def gated_delta_rule_mtp(q, k, v, initial_state, initial_state_indices, A_log, a, dt_bias, b, scale=None,
                         output=None, intermediate_states_buffer=None, ssm_state_indices=None,
                         disable_state_update=None, use_qk_l2norm=True, output_state_indices=None,
                         cache_replayssm=False, replayssm_rawv=None, replayssm_rawk=None, replayssm_g=None,
                         replayssm_beta=None):
    record("gated_delta_rule_mtp", locals())
    B, T, H, K, HV, V = _qkv(q, k, v)
    need(disable_state_update is not None, "disable_state_update passed explicitly (its default is deprecated)")
    shape_is(initial_state, (initial_state.shape[0], HV, V, K), "initial_state [pool, HV, V, K]")
    dtype_in(initial_state, ("f32",), "initial_state")
    shape_is(initial_state_indices, (B,), "initial_state_indices [B]")
    dtype_in(initial_state_indices, IDX, "initial_state_indices")
    need(K >= 128 and V >= 128, "K, V >= 128")
    _gate(a, b, A_log, dt_bias, B, T, HV)
    if intermediate_states_buffer is not None:
        dtype_in(intermediate_states_buffer, ("f32",), "intermediate_states_buffer")
        need(intermediate_states_buffer.shape[0] >= B and intermediate_states_buffer.shape[1] >= T
             and intermediate_states_buffer.shape[2:] == (HV, V, K), "intermediate [>=B, >=T, HV, V, K]")
    return _output(output, B, T, HV, V), initial_state


__all__ = ["ContractError", "gated_delta_rule_decode_pretranspose", "gated_delta_rule_decode", "gated_delta_rule_mtp"]

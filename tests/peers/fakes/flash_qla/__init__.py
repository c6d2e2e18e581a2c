"""Fake flash_qla (see ../README.md): 0.1.3's chunk_gated_delta_rule signature and checks."""
from spec_checks import dtype_in, need, record, shape_is
from peerlib.ops import SpecTensor

__version__ = "0.1.3+fake"


def chunk_gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
                           use_qk_l2norm_in_kernel=False, cu_seqlens=None, head_first=False, state_v_first=False,
                           auto_cp=True, enable_fwd_cp_cache=True, cp_context=None, force_intra_cp=False):
    record("chunk_gated_delta_rule", locals())
    need(q.dtype == k.dtype == v.dtype and q.dtype in ("bf16", "f16"), "bf16/f16 q, k, v")
    need(not head_first, "head_first")
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    need(HV % k.shape[2] == 0, "HV % H")
    need(K == V == 128, "fused_fwd asserts K == V == 128")
    for name, x in (("g", g), ("beta", beta)):
        shape_is(x, (B, T, HV), name)
    if cu_seqlens is not None:
        need(B == 1, "B = 1 with cu_seqlens")
        dtype_in(cu_seqlens, ("i64", "i32"), "cu_seqlens")
        n = cu_seqlens.shape[0] - 1
    else:
        n = B
    if initial_state is not None:
        need(initial_state.shape[0] == n, "one initial state per sequence")
        shape_is(initial_state, (n, HV, V, K) if state_v_first else (n, HV, K, V), "initial_state layout")
    o = SpecTensor(v.shape, q.dtype, "o")
    final = SpecTensor((n, HV, V, K) if state_v_first else (n, HV, K, V), "f32", "final") if output_final_state else None
    return o, final

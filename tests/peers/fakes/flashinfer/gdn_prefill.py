"""Fake flashinfer.gdn_prefill: 0.7.2.post1's signature and argument checks (gdn_prefill.py and
the SM90 kernel's can_implement)."""
from spec_checks import dtype_in, need, record, shape_is
from peerlib.ops import SpecTensor

STATE_DTYPES = ("f32", "bf16", "f16")


def chunk_gated_delta_rule(q, k, v, g=None, beta=None, scale=None, initial_state=None, output_final_state=False,
                           cu_seqlens=None, use_qk_l2norm_in_kernel=False, output=None, output_state=None,
                           state_checkpoints=None, checkpoint_cu_starts=None, checkpoint_every_n_tokens=0,
                           use_cp="auto", state_indices=None, _cp_chunk_len=None, backend="auto", max_seqlen=None):
    record("chunk_gated_delta_rule", locals())
    need(cu_seqlens is not None, "cu_seqlens is required")
    dtype_in(cu_seqlens, ("i32", "i64"), "cu_seqlens")
    n = cu_seqlens.shape[0] - 1
    need(n >= 1, "at least one sequence")
    total = q.shape[0]
    need(len(q.shape) == 3 and len(k.shape) == 3 and len(v.shape) == 3, "q, k, v [T, H, d]")
    hq, hk, hv, d = q.shape[1], k.shape[1], v.shape[1], q.shape[2]
    need(k.shape[0] == total and v.shape[0] == total, "q, k, v tokens")
    need(k.shape[2] == d and v.shape[2] == d, "one head size for q, k and v")
    dtype_in(q, ("bf16", "f16"), "q")
    need(k.dtype == q.dtype == v.dtype, "q, k, v dtypes")
    ratio = hq // hv if hq > hv else hv // hq
    gva = hv > hq
    need((gva and hq == hk and hv == ratio * hq) or (not gva and hk == hv and hq == ratio * hk), "GQA/GVA heads")
    need(d <= 128 and d % 8 == 0, "SM90 head_size <= 128, % 8")
    sab = max(hq, hv)
    for name, x in (("g", g), ("beta", beta)):
        if x is not None:
            dtype_in(x, ("f32",), name)
            shape_is(x, (total, sab), f"{name} [T, max(Hq, Hv)]")
    need(type(max_seqlen) is int or max_seqlen is None, "max_seqlen is a host int")
    if max_seqlen is not None:
        need(-(-total // n) <= max_seqlen <= total and (max_seqlen > 0 or total == 0), "max_seqlen bounds")
    need(use_cp in ("auto", True, False), "use_cp")
    need(backend in ("auto", "flashinfer", "cake_gdn", "cudnn"), "backend")
    if initial_state is not None:
        dtype_in(initial_state, STATE_DTYPES, "initial_state")
        shape_is(initial_state, (n, sab, d, d), "initial_state [N, H, V, K]")
    if output is not None:
        shape_is(output, (total, sab, d), "output [T, Ho, d]")
        need(output.dtype == q.dtype, "output dtype = q dtype")
    if output_state is not None:
        dtype_in(output_state, STATE_DTYPES, "output_state")
        shape_is(output_state, (n, sab, d, d), "output_state [N, H, V, K]")
    o = output if output is not None else SpecTensor((total, sab, d), q.dtype, "allocated output")
    if output_final_state:
        st = output_state if output_state is not None else SpecTensor((n, sab, d, d), "f32", "allocated state")
        return o, st
    return o

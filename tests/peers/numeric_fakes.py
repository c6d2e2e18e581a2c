"""Numeric stand-ins for the FlashInfer, FlashQLA and FLA functions the harness calls, in torch on
the CPU: the signatures of flashinfer-python 0.7.2.post1, flash-qla 0.1.3 and fla-core 0.6.0 and their documented
semantics (layouts, gate forms, pool indexing, -1 rows, in-place writes), computed with the
harness's fp64 reference recurrence. Verification of the harness against them passes only when
the harness maps every argument and reads every result back the way the real peers define them.
`transpose_bug=True` makes the FlashInfer prefill stand-in read its state in the wrong layout
(the negative control)."""

import torch

from peerlib import reference

OPTIONS = {"transpose_bug": False}


def _gates(A_log, a, dt_bias, b):
    x = a.double() + dt_bias.double()
    softplus = torch.where(x > 20, x, torch.log1p(torch.exp(torch.clamp(x, max=20))))
    return -torch.exp(A_log.double()) * softplus, torch.sigmoid(b.double())


def _rows(q, k, v, g, beta, h0_kv, scale, l2norm):
    """o [n, T, HV, V], per-step states [n, T, HV, K, V], final [n, HV, K, V] (kv, fp64)."""
    n, steps, hv = q.shape[0], q.shape[1], v.shape[2]
    flat = lambda x: x.reshape(n * steps, *x.shape[2:])  # noqa: E731
    seen = []
    o, final = reference.recurrent(flat(q), flat(k), flat(v), flat(g), flat(beta), [i * steps for i in range(n + 1)],
                                   h0_kv, scale, l2norm, list(range(hv)), hv // q.shape[2],
                                   on_step=lambda t, s: seen.append(s.clone()))
    return o.reshape(n, steps, hv, -1), torch.stack(seen, 1), final


def _pool_step(q, k, v, pool, idx, A_log, a, dt_bias, b, scale, output, l2norm, cache, update, null_slot):
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    scale = K ** -0.5 if scale is None else scale
    idx = idx.long()
    if null_slot:
        idx = torch.where(idx < 0, torch.zeros_like(idx), idx)  # bf16 path: -1 reads and writes slot 0
    rows = torch.nonzero(idx >= 0).flatten()
    g, beta = _gates(A_log, a, dt_bias, b)
    h0 = pool[idx[rows]].double().transpose(-1, -2)
    o, seen, final = _rows(q[rows], k[rows], v[rows], g[rows], beta[rows], h0, scale, l2norm)
    out = output if output is not None else torch.zeros(B, T, HV, V, dtype=torch.bfloat16)
    out[rows] = o.to(out.dtype)
    if update:
        pool[idx[rows]] = final.transpose(-1, -2).to(pool.dtype)
    if cache is not None:
        cache[rows, :T] = seen.transpose(-1, -2).to(cache.dtype)
    return out


def gated_delta_rule_decode_pretranspose(q, k, v, state, A_log, a, dt_bias, b, scale=None, output=None,
                                         use_qk_l2norm=True, initial_state=None, initial_state_indices=None,
                                         output_state_indices=None, intermediate_states_buffer=None,
                                         disable_state_update=False, backend="auto"):
    pool = initial_state if initial_state is not None else state
    idx = initial_state_indices if initial_state_indices is not None else torch.arange(q.shape[0])
    bf16 = pool.dtype == torch.bfloat16
    out = _pool_step(q, k, v, pool, idx, A_log, a, dt_bias, b, scale, output, use_qk_l2norm,
                     intermediate_states_buffer, not disable_state_update, null_slot=bf16)
    if not bf16:
        out[idx < 0] = 0  # fp32 path: padding rows get a zero output row
    return out, pool


def gated_delta_rule_decode(q, k, v, state, A_log, a, dt_bias, b, scale=None, output=None, use_qk_l2norm=True,
                            backend="auto"):
    B = q.shape[0]
    vk = state.transpose(-1, -2)  # a view: the in-place writes land in the kv state
    out = _pool_step(q, k, v, vk, torch.arange(B), A_log, a, dt_bias, b, scale, output, use_qk_l2norm, None, True,
                     null_slot=False)
    return out, state


def gated_delta_rule_mtp(q, k, v, initial_state, initial_state_indices, A_log, a, dt_bias, b, scale=None,
                         output=None, intermediate_states_buffer=None, ssm_state_indices=None,
                         disable_state_update=None, use_qk_l2norm=True, output_state_indices=None,
                         cache_replayssm=False, replayssm_rawv=None, replayssm_rawk=None, replayssm_g=None,
                         replayssm_beta=None):
    out = _pool_step(q, k, v, initial_state, initial_state_indices, A_log, a, dt_bias, b, scale, output, use_qk_l2norm,
                     intermediate_states_buffer, not disable_state_update, null_slot=False)
    return out, initial_state


def chunk_gated_delta_rule(q, k, v, g=None, beta=None, scale=None, initial_state=None, output_final_state=False,
                           cu_seqlens=None, use_qk_l2norm_in_kernel=False, output=None, output_state=None,
                           state_checkpoints=None, checkpoint_cu_starts=None, checkpoint_every_n_tokens=0,
                           use_cp="auto", state_indices=None, _cp_chunk_len=None, backend="auto", max_seqlen=None):
    """FlashInfer's prefill: g is alpha (linear), states [N, HV, V, K]."""
    cu = cu_seqlens.tolist()
    hv, d = v.shape[1], q.shape[2]
    h0 = None
    if initial_state is not None:
        h0 = initial_state.double() if OPTIONS["transpose_bug"] else initial_state.double().transpose(-1, -2)
    scale = d ** -0.5 if scale is None else scale
    o, final = reference.recurrent(q, k, v, torch.log(g.double()), beta, cu, h0, scale, use_qk_l2norm_in_kernel,
                                   list(range(hv)), hv // q.shape[1])
    output[:] = o.to(output.dtype)
    output_state[:] = final.transpose(-1, -2).to(output_state.dtype)
    return output, output_state


def flashqla_chunk_gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
                                    use_qk_l2norm_in_kernel=False, cu_seqlens=None, head_first=False,
                                    state_v_first=False, auto_cp=True, enable_fwd_cp_cache=True, cp_context=None,
                                    force_intra_cp=False):
    """FlashQLA: FLA's conventions, [1, T, ...] with cu_seqlens, log g, state_v_first layouts."""
    cu = cu_seqlens.tolist()
    hv, d = v.shape[2], q.shape[3]
    h0 = None
    if initial_state is not None:
        h0 = initial_state.double().transpose(-1, -2) if state_v_first else initial_state.double()
    scale = d ** -0.5 if scale is None else scale
    o, final = reference.recurrent(q[0], k[0], v[0], g[0], beta[0], cu, h0, scale, use_qk_l2norm_in_kernel,
                                   list(range(hv)), hv // q.shape[2])
    final = final.transpose(-1, -2) if state_v_first else final
    return o.to(q.dtype).unsqueeze(0), final.float()


def fla_gated_delta_rule(q, k, v, g=None, gk=None, gv=None, beta=None, scale=None, initial_state=None,
                         output_final_state=False, use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False,
                         A_log=None, dt_bias=None, use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False,
                         state_v_first=False, cu_seqlens=None, **kwargs):
    """FLA's fused_recurrent / chunk: [B, T, ...] (varlen: B = 1 and cu_seqlens), log g or the raw
    gate in the kernel, states [N, HV, K, V] or [N, HV, V, K] with state_v_first."""
    B, T, H, K = q.shape
    hv = v.shape[2]
    cu = cu_seqlens.tolist() if cu_seqlens is not None else [i * T for i in range(B + 1)]
    flat = lambda x: x.reshape(B * T, *x.shape[2:])  # noqa: E731
    if use_gate_in_kernel:
        g, _ = _gates(A_log, g, dt_bias, g)
    if use_beta_sigmoid_in_kernel:
        beta = torch.sigmoid(beta.double())
    h0 = None
    if initial_state is not None:
        h0 = initial_state.double().transpose(-1, -2) if state_v_first else initial_state.double()
    scale = K ** -0.5 if scale is None else scale
    o, final = reference.recurrent(flat(q), flat(k), flat(v), flat(g), flat(beta), cu, h0, scale,
                                   use_qk_l2norm_in_kernel, list(range(hv)), hv // H)
    final = final.transpose(-1, -2) if state_v_first else final
    return o.reshape(B, T, hv, -1).to(q.dtype), final.float() if output_final_state else None


def prepare_varlen_metadata(cu_seqlens, cu_seqlens_cpu):
    assert torch.equal(cu_seqlens.cpu(), cu_seqlens_cpu)
    return cu_seqlens


FLASHINFER = {"gated_delta_rule_decode_pretranspose": gated_delta_rule_decode_pretranspose,
              "gated_delta_rule_decode": gated_delta_rule_decode, "gated_delta_rule_mtp": gated_delta_rule_mtp,
              "chunk_gated_delta_rule": chunk_gated_delta_rule}
FLA = {"chunk": fla_gated_delta_rule, "recurrent": fla_gated_delta_rule}
FLASHQLA = {"chunk_gated_delta_rule": flashqla_chunk_gated_delta_rule,
            "prepare_varlen_metadata": prepare_varlen_metadata}

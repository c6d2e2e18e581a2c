"""A plain PyTorch Gated DeltaNet (docs/method.md 1), token by token: a correct kernel for
`scripts/peers/kernel_peer.py --kernel examples/python-kernel/gdn_torch.py:gated_delta_rule`,
on the CPU and on a CUDA device alike (every tensor stays where it came from).

gated_delta_rule has the call convention of FLA's fused_recurrent_gated_delta_rule (the "fla"
convention of docs/python-kernels.md), so FLA's own function, or any function with its
signature, drops in where this one is. gdnbench_adapter is the same recurrence in the "gdnbench"
convention: gdnbench's tensors in a dict, the state pool updated in place."""

import torch

MAX_TOKENS = 16384  # a Python loop over tokens: longer batches are declined (gdnbench_supports)


def _recurrence(q, k, v, g, beta, state, scale, l2norm):
    """q, k [N, L, HV, K] (heads already expanded), v [N, L, HV, V], g, beta [N, L, HV] and the
    kv state [N, HV, K, V], all fp32. Returns o [N, L, HV, V] and the final state."""
    if l2norm:
        q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
        k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    o = torch.empty(v.shape, dtype=torch.float32, device=v.device)
    for t in range(q.shape[1]):
        kt = k[:, t]
        state = state * torch.exp(g[:, t])[..., None, None]
        pred = torch.einsum("nhkv,nhk->nhv", state, kt)
        state = state + kt[..., :, None] * (beta[:, t, :, None] * (v[:, t] - pred))[..., None, :]
        o[:, t] = scale * torch.einsum("nhkv,nhk->nhv", state, q[:, t])
    return o, state


def _gates(g, beta, A_log, dt_bias, raw_gate, raw_beta):
    """fp32 log gate and beta (docs/method.md 1): raw_gate: g holds a, g = -exp(A_log)
    softplus(a + dt_bias); raw_beta: beta holds b, beta = sigmoid(b)."""
    if raw_gate:
        g = -torch.exp(A_log.float()) * torch.nn.functional.softplus(g.float() + dt_bias.float())
    if raw_beta:
        beta = torch.sigmoid(beta.float())
    return g.float(), beta.float()


def _expand_heads(x, hv):
    return x.float().repeat_interleave(hv // x.shape[-2], dim=-2)


def gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
                     use_qk_l2norm_in_kernel=False, cu_seqlens=None, state_v_first=False,
                     use_gate_in_kernel=False, A_log=None, dt_bias=None, use_beta_sigmoid_in_kernel=False):
    """FLA's convention. q, k [B, T, H, K]; v [B, T, HV, V]; g, beta [B, T, HV] (log gate, or the
    raw a and b with use_gate_in_kernel / use_beta_sigmoid_in_kernel); initial_state [N, HV, K, V]
    ([N, HV, V, K] with state_v_first) or None; cu_seqlens [N + 1] int64 for varlen (B = 1).
    Returns (o [B, T, HV, V] in v's dtype, final state [N, HV, ...] or None)."""
    hv, kd = v.shape[2], q.shape[3]
    scale = kd ** -0.5 if scale is None else scale
    g, beta = _gates(g, beta, A_log, dt_bias, use_gate_in_kernel, use_beta_sigmoid_in_kernel)
    q, k, vf = _expand_heads(q, hv), _expand_heads(k, hv), v.float()
    if cu_seqlens is None:
        spans = None
    else:  # varlen: pad the packed sequences to [N, L]; padding steps have g = beta = 0 (no change)
        cu = cu_seqlens.tolist()
        spans = list(zip(cu[:-1], cu[1:]))
        length = max([e - s for s, e in spans] + [0])
        def pad(x):
            out = torch.zeros((len(spans), length, *x.shape[2:]), dtype=x.dtype, device=x.device)
            for n, (s, e) in enumerate(spans):
                out[n, : e - s] = x[0, s:e]
            return out
        q, k, vf, g, beta = pad(q), pad(k), pad(vf), pad(g), pad(beta)
    n = q.shape[0]
    if initial_state is None:
        state = torch.zeros((n, hv, kd, v.shape[3]), dtype=torch.float32, device=v.device)
    else:
        state = initial_state.float()
        state = state.transpose(-1, -2) if state_v_first else state
    o, state = _recurrence(q, k, vf, g, beta, state, scale, use_qk_l2norm_in_kernel)
    if spans is not None:
        o = torch.cat([o[i, : e - s] for i, (s, e) in enumerate(spans)]).unsqueeze(0)
    final = None
    if output_final_state:
        final = state.transpose(-1, -2) if state_v_first else state
        final = final.contiguous().to(initial_state.dtype if initial_state is not None else torch.float32)
    return o.to(v.dtype), final


def _declines(shape):
    """gdnbench_supports: None, or why this point is skipped."""
    tokens = sum(shape["seqlens"]) if shape["op"] == "prefill" else shape["batch"] * shape["tokens"]
    if tokens > MAX_TOKENS:
        return f"{tokens} tokens: a Python token loop, kept to {MAX_TOKENS} tokens"
    return None


gated_delta_rule.gdnbench_supports = _declines


def gdnbench_adapter(t, shape):
    """The "gdnbench" convention: t holds gdnbench's tensors (docs/method.md 2), shape the point.
    Updates t["pool"] in place (decode, mtp) and fills t["intermediate"] when the point caches;
    returns {"o": o} and, for prefill, "ht"."""
    vk = shape["layout"] == "vk"
    raw = shape["gate"] == "raw"
    g, beta = (t["a"], t["b"]) if raw else (t["g"], t["beta"])
    gate = dict(use_gate_in_kernel=raw, A_log=t.get("A_log"), dt_bias=t.get("dt_bias"),
                use_beta_sigmoid_in_kernel=raw)
    common = dict(scale=shape["scale"] or None, use_qk_l2norm_in_kernel=shape["l2norm"], state_v_first=vk, **gate)
    if shape["op"] == "prefill":
        lead = lambda x: x.unsqueeze(0)  # noqa: E731 - [T, ...] -> [1, T, ...]
        o, ht = gated_delta_rule(lead(t["q"]), lead(t["k"]), lead(t["v"]), lead(g), lead(beta),
                                 initial_state=t.get("h0"), output_final_state=True,
                                 cu_seqlens=t["cu_seqlens"].long(), **common)
        return {"o": o[0], "ht": ht}
    decode = shape["op"] == "decode"
    steps = (lambda x: x.unsqueeze(1)) if decode else (lambda x: x)  # noqa: E731 - decode has no time axis
    idx = t["indices"].long()
    rows = torch.nonzero(idx >= 0).flatten()
    pick = lambda x: steps(x).index_select(0, rows)  # noqa: E731 - padding rows (-1) do not run
    pool = t["pool"]
    o = torch.zeros(steps(t["v"]).shape, dtype=t["v"].dtype, device=t["v"].device)
    state = pool.index_select(0, idx.index_select(0, rows))
    cache = t.get("intermediate")
    if cache is None:
        out, final = gated_delta_rule(pick(t["q"]), pick(t["k"]), pick(t["v"]), pick(g), pick(beta),
                                      initial_state=state, output_final_state=True, **common)
    else:  # one token at a time, keeping the state after each
        out_steps, final = [], state.float()  # fp32 between steps, rounded only into the cache
        cache.zero_()
        for s in range(shape["tokens"]):
            one = lambda x: pick(x)[:, s:s + 1]  # noqa: E731
            o_s, final = gated_delta_rule(one(t["q"]), one(t["k"]), one(t["v"]), one(g), one(beta),
                                          initial_state=final, output_final_state=True, **common)
            out_steps.append(o_s)
            cache[:, s].index_copy_(0, rows, final.to(cache.dtype))
        out = torch.cat(out_steps, dim=1)
    o.index_copy_(0, rows, out)
    if decode or shape["update_state"]:
        # index_copy_, not pool[slots] = ...: torch's CPU index_put is ~100x slower here
        pool.index_copy_(0, idx.index_select(0, rows), final.to(pool.dtype))
    return {"o": o.squeeze(1) if decode else o}

"""A small recurrent reference in torch (docs/method.md 1, token by token), its chunked fp64 form
(docs/method.md 6) for long sequences, and the docs/method.md 4 error metrics, so a broken peer shows
up in its report. Runs in fp64 on the inputs' device over a chosen subset of value heads; the loop
is over time steps (or chunks), vectorized over sequences and heads."""

import math

import torch


def sample_heads(hv, limit=4):
    """Deterministic spread of value heads: first, thirds, last (the last is a no-decay head)."""
    picks = sorted({0, hv // 3, (2 * hv) // 3, hv - 1})
    return picks[:limit]


def recurrent(q, k, v, g, beta, cu, h0_kv, scale, l2norm, heads, group, on_step=None):
    """o [T, len(heads), V] and final states [N, len(heads), K, V], both fp64.

    q, k [T, H, K]; v [T, HV, V]; g, beta [T, HV] (log form); cu: host list of N+1 offsets;
    h0_kv: [N, HV, K, V] (kv layout) or None; heads: value heads to run. on_step(t, state) sees
    the state after step t of every sequence (the mtp intermediate cache is checked this way,
    without keeping every step's state)."""
    q, k, v, g, beta, seq, pos = _prepared(q, k, v, g, beta, cu, l2norm, heads, group)
    dev = v.device
    hsel = torch.tensor(heads, device=dev)
    n = len(cu) - 1
    length = int(max(cu[i + 1] - cu[i] for i in range(n)))

    def padded(x):
        # Padding steps have g = 0 and beta = 0, so they leave the state exactly as it was.
        out = torch.zeros((n, length, *x.shape[1:]), dtype=x.dtype, device=dev)
        out[seq, pos] = x
        return out

    qp, kp, vp, gp, bp = padded(q), padded(k), padded(v), padded(g), padded(beta)
    nh, kd, vd = len(heads), k.shape[-1], v.shape[-1]
    if h0_kv is None:
        state = torch.zeros((n, nh, kd, vd), dtype=torch.float64, device=dev)
    else:
        state = h0_kv.index_select(1, hsel).double().clone()
    o = torch.empty((n, length, nh, vd), dtype=torch.float64, device=dev)
    for t in range(length):
        kt = kp[:, t]
        state.mul_(torch.exp(gp[:, t])[..., None, None])
        pred = torch.einsum("nhkv,nhk->nhv", state, kt)
        delta = bp[:, t, :, None] * (vp[:, t] - pred)
        state.add_(kt[..., :, None] * delta[..., None, :])
        o[:, t] = scale * torch.einsum("nhkv,nhk->nhv", state, qp[:, t])
        if on_step is not None:
            on_step(t, state)
    return o[seq, pos], state


def _prepared(q, k, v, g, beta, cu, l2norm, heads, group):
    """The selected heads in fp64 (q, k normalised when l2norm) and the (sequence, position) of
    every packed row."""
    dev = v.device
    hsel = torch.tensor(heads, device=dev)
    q = q.index_select(1, hsel // group).double()
    k = k.index_select(1, hsel // group).double()
    v = v.index_select(1, hsel).double()
    g = g.index_select(1, hsel).double()
    beta = beta.index_select(1, hsel).double()
    if l2norm:
        q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
        k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    n = len(cu) - 1
    lens = torch.tensor([cu[i + 1] - cu[i] for i in range(n)], device=dev)
    seq = torch.repeat_interleave(torch.arange(n, device=dev), lens)
    pos = torch.arange(cu[-1], device=dev) - torch.tensor(cu[:-1], device=dev)[seq]
    return q, k, v, g, beta, seq, pos


def chunked(q, k, v, g, beta, cu, h0_kv, scale, l2norm, heads, group, chunk=64):
    """recurrent()'s o and final states by chunks of `chunk` tokens (docs/method.md 6 and
    A.1), in fp64: per chunk, gam = the inclusive cumsum of g, Gam_ij = e^(gam_i - gam_j) (i >= j),
    A = (I + Gam * StrictLower(diag(beta) K K^T))^-1 by a triangular solve, V_d = A diag(beta)
    (V - diag(e^gam) K S), O = scale (diag(e^gam) Q S + (Gam * Q K^T) V_d), S = e^G S +
    K^T diag(e^(G - gam)) V_d. Agrees with the token loop to about 1e-12 relative (selftest) and
    walks 64 times fewer steps: the peers' verification of a 32768-token sequence in well under a
    second instead of about ten."""
    q, k, v, g, beta, seq, pos = _prepared(q, k, v, g, beta, cu, l2norm, heads, group)
    dev = v.device
    n = len(cu) - 1
    length = int(max(cu[i + 1] - cu[i] for i in range(n)))
    nc = max((length + chunk - 1) // chunk, 1)
    nh, kd, vd = len(heads), k.shape[-1], v.shape[-1]

    def padded(x):  # [n, nc, chunk, heads, ...] -> [n, heads, nc, chunk, ...]
        out = torch.zeros((n, nc * chunk, *x.shape[1:]), dtype=x.dtype, device=dev)
        out[seq, pos] = x
        out = out.reshape(n, nc, chunk, *x.shape[1:])
        return out.permute(0, 3, 1, 2, *range(4, out.dim())) if x.dim() == 3 else out.permute(0, 3, 1, 2)

    qp, kp, vp, gp, bp = padded(q), padded(k), padded(v), padded(g), padded(beta)
    if h0_kv is None:
        state = torch.zeros((n, nh, kd, vd), dtype=torch.float64, device=dev)
    else:
        state = h0_kv.index_select(1, torch.tensor(heads, device=dev)).double().clone()
    lower = torch.ones(chunk, chunk, dtype=torch.bool, device=dev).tril()
    strict = lower.clone().fill_diagonal_(False)
    eye = torch.eye(chunk, dtype=torch.float64, device=dev)
    o = torch.empty((n, nh, nc, chunk, vd), dtype=torch.float64, device=dev)
    for c in range(nc):
        kc, qc, vc, bc = kp[:, :, c], qp[:, :, c], vp[:, :, c], bp[:, :, c]
        gam = torch.cumsum(gp[:, :, c], dim=-1)
        diff = gam[..., :, None] - gam[..., None, :]
        gmat = torch.where(lower, torch.exp(torch.where(lower, diff, torch.zeros_like(diff))), torch.zeros_like(diff))
        lmat = torch.where(strict, bc[..., :, None] * (kc @ kc.transpose(-1, -2)) * gmat, torch.zeros_like(diff))
        a = torch.linalg.solve_triangular(eye + lmat, eye.expand_as(lmat), upper=False, unitriangular=True)
        w = vc - torch.exp(gam)[..., None] * (kc @ state)
        vd_ = a @ (bc[..., None] * w)
        o[:, :, c] = scale * (torch.exp(gam)[..., None] * (qc @ state) + (gmat * (qc @ kc.transpose(-1, -2))) @ vd_)
        big_g = gam[..., -1]
        state = torch.exp(big_g)[..., None, None] * state + kc.transpose(-1, -2) @ (torch.exp(big_g[..., None] - gam)[..., None] * vd_)
    o = o.reshape(n, nh, nc * chunk, vd).permute(0, 2, 1, 3)
    return o[seq, pos], state


class StepCheck:
    """docs/method.md 4 metrics of a per-step state output, accumulated step by step: `out` is
    [N, L, heads, K, V] (kv), compared with the reference's state after each step."""

    def __init__(self, out):
        self.out = out
        self.diff2, self.ref2, self.max_abs, self.nonfinite = 0.0, 0.0, 0.0, 0

    def __call__(self, t, state):
        x = self.out[:, t].double()
        self.nonfinite += int((~torch.isfinite(x)).sum())
        d = x - state
        self.diff2 += float((d * d).sum())
        self.ref2 += float((state * state).sum())
        if d.numel():
            self.max_abs = max(self.max_abs, float(d.abs().max()))

    def result(self, name, tolerance):
        rel = math.sqrt(self.diff2 / self.ref2) if self.ref2 > 0 else math.nan
        passed = self.nonfinite == 0 and math.isfinite(rel) and rel <= tolerance
        return {"tensor": name, "rel_l2": rel, "max_abs": self.max_abs, "tolerance": tolerance,
                "checked": int(self.out.numel()), "nonfinite": self.nonfinite, "passed": passed}


def check(name, out, ref, tolerance):
    """docs/method.md 4 metrics of `out` against `ref`: rel-L2, max abs, non-finite count, pass."""
    x = out.double()
    nonfinite = int((~torch.isfinite(x)).sum())
    diff = x - ref
    ref_norm = float(torch.linalg.vector_norm(ref))
    rel = float(torch.linalg.vector_norm(diff)) / ref_norm if ref_norm > 0 else math.nan
    max_abs = float(diff.abs().max()) if diff.numel() else 0.0
    passed = nonfinite == 0 and math.isfinite(rel) and rel <= tolerance
    return {"tensor": name, "rel_l2": rel, "max_abs": max_abs, "tolerance": tolerance,
            "checked": int(x.numel()), "nonfinite": nonfinite, "passed": passed}

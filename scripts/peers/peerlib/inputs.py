"""Seeded inputs of one gdnbench point with torch (docs/method.md 3, src/run/inputs.cpp).

The distributions are gdnbench's, tensor by tensor, with the numbers the plan point's `inputs`
block gives (gdnbench writes them from its generator's constants, src/run/input_distribution.h);
the drawn values are not gdnbench's (gdnbench hashes (seed, name, index) on the host, this draws
from torch.Generator(seed) on the device). Kernel time does not depend on the values, and the verification here uses these very inputs.

Layout: token-major as gdnbench's tensors; decode/mtp keep a time axis ([B, T, ...], T = 1 for
decode) because that is what FLA takes."""

import torch

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


class Draw:
    """Draws on `device` from a generator seeded with the point's seed (64-bit)."""

    def __init__(self, seed, device):
        self.device = torch.device(device)
        self.gen = torch.Generator(device=self.device)
        self.gen.manual_seed(int(seed) & 0xFFFFFFFFFFFFFFFF)

    def normal(self, *dims):
        return torch.randn(*dims, generator=self.gen, device=self.device, dtype=torch.float32)

    def uniform(self, *dims):
        return torch.rand(*dims, generator=self.gen, device=self.device, dtype=torch.float32)

    def perm(self, n):
        return torch.randperm(n, generator=self.gen, device=self.device)


def strong_decay_rates(dist, d, hv):
    """A_h ~ U[0, rate_max] per value head, head 0 never decays."""
    a = dist["rate_max"] * d.uniform(hv)
    a[0] = 0.0
    return a


def log_gate(s, dist, d, rows):
    """g [*rows, HV] fp32 (log form), as the plan point's inputs.g says."""
    hv, g = s["h_v"], dist["g"]
    if g["form"] == "zero":
        return torch.zeros(*rows, hv, device=d.device)
    if g["form"] == "strong_decay":
        a = strong_decay_rates(g, d, hv)
        return -a * torch.nn.functional.softplus(g["softplus_scale"] * d.normal(*rows, hv) + g["softplus_shift"])
    out = torch.nn.functional.logsigmoid(d.normal(*rows, hv)) / g["divisor"]
    out[..., dist["still_heads_from"]:] = 0.0
    return out


def beta(s, dist, d, rows):
    if dist["beta"]["form"] == "one":
        return torch.ones(*rows, s["h_v"], device=d.device)
    return torch.sigmoid(d.normal(*rows, s["h_v"]))


def raw_gate(s, dist, d, rows):
    """A_log [HV] fp32, a [*rows, HV] bf16, dt_bias [HV] fp32, b [*rows, HV] bf16."""
    hv, form = s["h_v"], dist["a_log"]
    if form["form"] == "minus_inf":
        a_log = torch.full((hv,), float("-inf"), device=d.device)
    elif form["form"] == "log_rate":
        a_log = torch.log(strong_decay_rates(form, d, hv))  # log 0 = -inf: head 0 never decays
    else:
        a_log = torch.log(form["low"] + (form["high"] - form["low"]) * d.uniform(hv))
        a_log[dist["still_heads_from"]:] = float("-inf")
    a = d.normal(*rows, hv).to(torch.bfloat16)
    dt_bias = dist["dt_bias"]["scale"] * d.normal(hv) + dist["dt_bias"]["shift"]
    if dist["b"]["form"] == "constant":
        b = torch.full((*rows, hv), float(dist["b"]["value"]), device=d.device).to(torch.bfloat16)
    else:
        b = d.normal(*rows, hv).to(torch.bfloat16)
    return {"A_log": a_log, "a": a, "dt_bias": dt_bias, "b": b}


def gate_from_raw(a_log, a, dt_bias, b):
    """docs/method.md 1 in fp64: g = -exp(A_log) softplus(a + dt_bias) (softplus(x) = x above 20),
    beta = sigmoid(b)."""
    g = -torch.exp(a_log.double()) * torch.nn.functional.softplus(a.double() + dt_bias.double())
    return g, torch.sigmoid(b.double())


def qk(s, dist, d, rows):
    """q or k; without the kernel's L2 norm, rows normalised up front (docs/method.md 3) to a norm
    drawn per row in the plan's inputs.qk.row_norm range, as gdnbench's (src/run/inputs.cpp)."""
    dims = (*rows, s["h_qk"], s["dk"])
    spec = dist["qk"]
    x = spec["uniform_scale"] * d.uniform(*dims) if spec["draw"] == "uniform" else d.normal(*dims)
    if spec["row_norm"] is not None:
        lo, hi = spec["row_norm"]
        r = lo + (hi - lo) * d.uniform(*dims[:-1], 1).double()
        xd = x.double()
        x = (xd * r / xd.norm(dim=-1, keepdim=True).clamp_min(1e-300)).float()
    return x.to(DTYPES[s["input_dtype"]])


def state_dims(s, lead):
    kv = (s["dk"], s["dv"]) if s["layout"] == "kv" else (s["dv"], s["dk"])
    return (lead, s["h_v"], *kv)


def indices(s, dist, d):
    """Pool slot per row (-1 = padding), per Shape::indices."""
    b, p = s["batch"], (s["pool"] if s["pool"] > 0 else s["batch"])
    pattern = s["indices"]
    if pattern == "identity":
        return torch.arange(b, device=d.device, dtype=torch.int64)
    if pattern == "high":
        return (p - 1 - torch.arange(b, device=d.device, dtype=torch.int64))[d.perm(b)]
    idx = d.perm(p)[:b].to(torch.int64)
    if pattern == "padded":
        every = dist["padding_every"]
        idx[every - 1::every] = -1
    return idx


def make_inputs(s, dist, seed, device):
    """Every input tensor of the point, named as gdnbench names them. dist: the plan point's
    `inputs` block (the distribution and its numbers, as gdnbench's generator uses them)."""
    d = Draw(seed, device)
    op = s["op"]
    rows = (sum(s["seqlens"]),) if op == "prefill" else (s["batch"], s["tokens"] if op == "mtp" else 1)
    t = {"q": qk(s, dist, d, rows), "k": qk(s, dist, d, rows)}
    t["v"] = d.normal(*rows, s["h_v"], s["dv"]).to(DTYPES[s["input_dtype"]])
    if s["gate"] == "log":
        t["g"] = log_gate(s, dist, d, rows)
        t["beta"] = beta(s, dist, d, rows)
    else:
        t.update(raw_gate(s, dist, d, rows))
    if op == "prefill":
        cu = [0]
        for n in s["seqlens"]:
            cu.append(cu[-1] + n)
        t["cu_seqlens"] = cu  # host list; the FLA call makes its own tensors
        if s["has_h0"]:
            t["h0"] = d.normal(*state_dims(s, len(s["seqlens"])))
    else:
        pool_slots = s["pool"] if s["pool"] > 0 else s["batch"]
        t["pool"] = d.normal(*state_dims(s, pool_slots)).to(DTYPES[s["state_dtype"]])
        t["indices"] = indices(s, dist, d)
    return t

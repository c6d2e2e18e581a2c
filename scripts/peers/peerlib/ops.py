"""The tensor operations a peer's argument mapping uses, behind two backends:

- TorchOps makes real tensors on the GPU (what the harness times);
- SpecOps tracks only shapes, dtypes and where each tensor came from, in pure Python, so the
  CPU tests run the very mapping code the GPU runs and hand its arguments to fake peer modules
  that check what the real ones assert (tests/peers/).

Inputs are named as gdnbench names them and laid out as peerlib.inputs makes them: prefill
token-major ([T, ...]), decode and mtp [B, T, ...] (T = 1 for decode)."""

import math

from . import shapes as sh

RAW_LIMIT = 30.0  # |a| and |b| of a log gate re-expressed as a raw one (raw_from_log)

INDEX_DTYPE = {"i32": "i32", "i64": "i64"}


class SpecTensor:
    """A tensor's shape, dtype name (bf16, f16, f32, f64, i32, i64) and origin (for tests)."""

    def __init__(self, shape, dtype, origin):
        self.shape, self.dtype, self.origin = tuple(int(x) for x in shape), dtype, origin

    def numel(self):
        return math.prod(self.shape)

    def __repr__(self):
        return f"SpecTensor({list(self.shape)}, {self.dtype}, {self.origin})"


def padded_rows(batch):
    """Rows the `padded` index pattern marks -1 (inputs.indices: every 8th row, from row 7)."""
    return list(range(7, batch, 8))


def valid_row_list(s):
    """Rows of a decode/mtp point that name a pool slot (all but the padding rows)."""
    pad = set(padded_rows(s["batch"])) if s["indices"] == "padded" else set()
    return [i for i in range(s["batch"]) if i not in pad]


def spec_inputs(s):
    """What inputs.make_inputs returns for the point, as SpecTensors."""
    op, hv = s["op"], s["h_v"]
    rows = (sum(s["seqlens"]),) if op == "prefill" else (s["batch"], s["tokens"] if op == "mtp" else 1)
    e = s["input_dtype"]
    t = {"q": SpecTensor((*rows, s["h_qk"], s["dk"]), e, "q"), "k": SpecTensor((*rows, s["h_qk"], s["dk"]), e, "k"),
         "v": SpecTensor((*rows, hv, s["dv"]), e, "v")}
    if s["gate"] == "log":
        t["g"] = SpecTensor((*rows, hv), "f32", "g")
        t["beta"] = SpecTensor((*rows, hv), "f32", "beta")
    else:
        t["A_log"] = SpecTensor((hv,), "f32", "A_log")
        t["a"] = SpecTensor((*rows, hv), "bf16", "a")
        t["dt_bias"] = SpecTensor((hv,), "f32", "dt_bias")
        t["b"] = SpecTensor((*rows, hv), "bf16", "b")
    layout = (s["dk"], s["dv"]) if s["layout"] == "kv" else (s["dv"], s["dk"])
    if op == "prefill":
        cu = [0]
        for n in s["seqlens"]:
            cu.append(cu[-1] + n)
        t["cu_seqlens"] = cu
        if s["has_h0"]:
            t["h0"] = SpecTensor((len(s["seqlens"]), hv, *layout), "f32", "h0")
    else:
        t["pool"] = SpecTensor((sh.pool_slots(s), hv, *layout), s["state_dtype"], "pool")
        t["indices"] = SpecTensor((s["batch"],), "i64", "indices")
    return t


class SpecOps:
    """Shapes and dtypes only; every result says how it was made (origin)."""

    def __init__(self, s):
        self.s = s
        self.t = spec_inputs(s)

    def input(self, name):
        return self.t[name]

    def valid_rows(self):
        return SpecTensor((len(valid_row_list(self.s)),), "i64", "valid_rows")

    def select_rows(self, x, rows):
        return SpecTensor((rows.shape[0], *x.shape[1:]), x.dtype, f"{x.origin}[{rows.origin}]")

    def exp(self, x):
        assert x.dtype == "f32", x
        return SpecTensor(x.shape, "f32", f"exp({x.origin})")

    def gate_from_raw(self, rows=None):
        a = self.t["a"] if rows is None else self.select_rows(self.t["a"], rows)
        return (SpecTensor(a.shape, "f32", "g_from_raw"), SpecTensor(a.shape, "f32", "beta_from_raw"))

    def raw_from_log(self):
        g = self.t["g"]
        return {"A_log": SpecTensor(g.shape[-1:], "f32", "zeros"), "a": SpecTensor(g.shape, "bf16", "log(expm1(-g))"),
                "dt_bias": SpecTensor(g.shape[-1:], "f32", "zeros"), "b": SpecTensor(g.shape, "bf16", "logit(beta)")}

    def reshape(self, x, shape):
        y = SpecTensor(shape, x.dtype, x.origin)
        assert y.numel() == x.numel(), f"reshape {x} to {list(shape)}"
        return y

    def unsqueeze0(self, x):
        return SpecTensor((1, *x.shape), x.dtype, x.origin)

    def empty(self, shape, dtype, what):
        return SpecTensor(shape, dtype, f"empty {what}")

    def zeros(self, shape, dtype, what):
        return SpecTensor(shape, dtype, f"zeros {what}")

    def cast(self, x, dtype):
        return SpecTensor(x.shape, dtype, x.origin if dtype == x.dtype else f"{x.origin} as {dtype}")

    def device_ints(self, values, dtype, what):
        return SpecTensor((len(values),), dtype, what)

    def host_ints(self, values, dtype, what):
        return SpecTensor((len(values),), dtype, f"host {what}")

    def with_null_slot(self, pool, indices):
        return (SpecTensor((pool.shape[0] + 1, *pool.shape[1:]), pool.dtype, f"{pool.origin} behind a null slot 0"),
                SpecTensor(indices.shape, indices.dtype, f"{indices.origin} + 1 (-1 kept)"))

    def clone(self, x):
        return SpecTensor(x.shape, x.dtype, x.origin)

    def transpose_state(self, x):
        return SpecTensor((*x.shape[:-2], x.shape[-1], x.shape[-2]), x.dtype, f"{x.origin} transposed")


class TorchOps:
    """The same operations on the point's real tensors (peerlib.inputs.make_inputs)."""

    def __init__(self, s, tensors, device):
        import torch

        self.torch, self.s, self.t, self.device = torch, s, tensors, device
        self.dtypes = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "f64": torch.float64,
                       "i32": torch.int32, "i64": torch.int64}

    def input(self, name):
        return self.t[name]

    def valid_rows(self):
        return self.torch.nonzero(self.t["indices"] >= 0).flatten()

    def select_rows(self, x, rows):
        return x.index_select(0, rows)

    def exp(self, x):
        return self.torch.exp(x)

    def gate_from_raw(self, rows=None):
        from .inputs import gate_from_raw

        pick = (lambda x: x) if rows is None else (lambda x: x.index_select(0, rows))
        g, beta = gate_from_raw(self.t["A_log"], pick(self.t["a"]), self.t["dt_bias"], pick(self.t["b"]))
        return g.float().contiguous(), beta.float().contiguous()

    def raw_from_log(self):
        """A raw gate that gives the point's log gate back: A_log = 0 and dt_bias = 0 (so
        g = -softplus(a)), a = log(expm1(-g)), b = logit(beta), both rounded to bf16."""
        torch = self.torch
        g, beta = self.t["g"].double(), self.t["beta"].double()
        hv = g.shape[-1]
        # Finite stand-ins for g = 0 (a = -inf) and beta = 1 (b = +inf): FlashInfer's mtp kernel
        # turns softplus(-inf) into NaN (measured on an H200). softplus(-30) = 9.4e-14 and
        # sigmoid(30) = 1 - 9.4e-14 are 0 and 1 to fp32; the reference uses the values they give.
        a = torch.log(torch.expm1(-g)).clamp(min=-RAW_LIMIT)
        b = (torch.log(beta) - torch.log1p(-beta)).clamp(max=RAW_LIMIT)
        zeros = torch.zeros(hv, dtype=torch.float32, device=g.device)
        return {"A_log": zeros, "a": a.to(torch.bfloat16).contiguous(), "dt_bias": zeros.clone(),
                "b": b.to(torch.bfloat16).contiguous()}

    def reshape(self, x, shape):
        return x.reshape(shape)

    def unsqueeze0(self, x):
        return x.unsqueeze(0)

    def empty(self, shape, dtype, what):
        return self.torch.empty(shape, dtype=self.dtypes[dtype], device=self.device)

    def zeros(self, shape, dtype, what):
        return self.torch.zeros(shape, dtype=self.dtypes[dtype], device=self.device)

    def cast(self, x, dtype):
        return x.to(self.dtypes[dtype]).contiguous()

    def device_ints(self, values, dtype, what):
        return self.torch.tensor(values, dtype=self.dtypes[dtype], device=self.device)

    def host_ints(self, values, dtype, what):
        return self.torch.tensor(values, dtype=self.dtypes[dtype])

    def with_null_slot(self, pool, indices):
        torch = self.torch
        bigger = torch.zeros((pool.shape[0] + 1, *pool.shape[1:]), dtype=pool.dtype, device=pool.device)
        bigger[1:] = pool
        return bigger, torch.where(indices >= 0, indices + 1, indices)

    def clone(self, x):
        return x.clone()

    def transpose_state(self, x):
        return x.transpose(-1, -2).contiguous()

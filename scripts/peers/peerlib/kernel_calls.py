"""One call of a user's kernel function per (point, variant), every argument made outside the
timed region, in either convention (docs/python-kernels.md):

- "fla": FlaCall, FLA's own call (peerlib/fla_calls.py) with the user's function in FLA's place.
- "gdnbench": fn(t, shape) with t the point's tensors as docs/method.md 2 lays them out (decode
  without a time axis, prefill token-major with int32 cu_seqlens, the pool updated in place, the
  mtp cache a caller-owned buffer); it returns {"o": ...} (and "ht" for prefill). MappedCall reads
  the results back and restores the pool before verifying."""

from types import SimpleNamespace

import torch

from .fla_calls import FlaCall
from .mapped_call import MappedCall
from .mapping import Mapped, Result, StateOut

INDEX_DTYPES = {"i32": torch.int32, "i64": torch.int64}


def _gdnbench_tensors(s, t, device):
    """The dict the function gets: gdnbench's names, shapes and dtypes (docs/method.md 2)."""
    decode = s["op"] == "decode"
    out = {}
    for name in ("q", "k", "v", "g", "beta", "a", "b"):
        if name in t:
            out[name] = t[name].squeeze(1) if decode else t[name]
    for name in ("A_log", "dt_bias", "h0", "pool"):
        if name in t:
            out[name] = t[name]
    if s["op"] == "prefill":
        out["cu_seqlens"] = torch.tensor(t["cu_seqlens"], dtype=torch.int32, device=device)
    else:
        out["indices"] = t["indices"].to(INDEX_DTYPES[s["index_dtype"]])
        if s["op"] == "mtp" and s["cache_intermediate"]:
            state = t["pool"].shape[2:]
            out["intermediate"] = torch.zeros((s["batch"], s["tokens"], s["h_v"], *state), dtype=t["pool"].dtype,
                                              device=device)
    return out


def gdnbench_mapped(s, t, device):
    """The Mapped of a gdnbench-convention call: where o, ht, the pool slots and the cache are."""
    kw = _gdnbench_tensors(s, t, device)
    o = Result("result", "o")
    if s["op"] == "prefill":
        return Mapped("kernel", kw, o=o, final=StateOut(Result("result", "ht"), s["layout"]))
    valid = torch.nonzero(t["indices"] >= 0).flatten()
    slots = t["indices"].index_select(0, valid)
    writes = s["op"] == "decode" or s["update_state"]
    m = Mapped("kernel", kw, o=o, o_rows=valid if s["indices"] == "padded" else None, inplace=("pool",),
               final=StateOut(Result("kwarg", "pool"), s["layout"], slots) if writes else None,
               # Read-only (update off): every slot must come back bit-identical.
               untouched=("pool", slots if writes else None, False))
    if "intermediate" in kw:
        m.inplace += ("intermediate",)
        m.intermediate = StateOut(Result("kwarg", "intermediate"), s["layout"], valid)
    return m


def make_call(kernel, s, plan, t, device):
    """The callable the runner warms up, verifies and times. kernel: kernel_load's namespace."""
    if kernel.convention == "fla":
        return FlaCall(SimpleNamespace(recurrent=kernel.fn, chunk=kernel.fn, prepare_chunk_indices=None), s, plan, t,
                       device)
    fn = kernel.fn
    shape = dict(s)
    return MappedCall({"kernel": lambda **tensors: fn(tensors, shape)}, s, gdnbench_mapped(s, t, device), t)

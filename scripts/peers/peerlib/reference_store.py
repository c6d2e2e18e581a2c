"""Reference results kept on disk across harness processes, so the peers of one run (FLA,
FlashQLA, FlashInfer, each its own process) walk the fp64 token loop of a point once between
them: on the qwen35 sweep that loop is most of a peer's verification time (seconds per cell, up to
about ten for a 32768-token sequence). Off unless GDN_PEER_REF_CACHE names a directory.

An entry is found by what the reference reads, not by the point's name: the shape key, the value
heads, the call's ref_key and a fingerprint of every input tensor (shape, dtype and two weighted
sums in fp64 on the tensor's device), so a peer that received other inputs (a re-expressed gate,
another seed) never meets another's reference."""

import hashlib
import os

import torch

ENV = "GDN_PEER_REF_CACHE"
# Only references that took this long are kept: since the chunked form (reference.chunked) a
# 32768-token prefill check takes well under a second on the GPU, about what writing its 134 MB
# entry costs, so the store now keeps only what is still slow to recompute (and its disk stays small).
MIN_SECONDS_TO_STORE = 1.0


def _fingerprint(x):
    if x is None:
        return "none"
    if not torch.is_tensor(x):
        return repr(list(x))
    y = x.detach().reshape(-1).double()
    w = torch.arange(y.numel(), device=y.device, dtype=torch.float64).remainder_(1013.0).add_(1.0)
    return f"{tuple(x.shape)}:{x.dtype}:{float((y * w).sum())!r}:{float((y * y).sum())!r}"


def entry_path(shape_key, heads, ref_key, ri, root=None):
    """The file of this reference under root (default: $GDN_PEER_REF_CACHE), or None when off."""
    root = root if root is not None else os.environ.get(ENV, "")
    if not root:
        return None
    parts = [shape_key, ",".join(map(str, heads)), ref_key] + [
        f"{name}={_fingerprint(ri.get(name))}" for name in ("q", "k", "v", "g", "beta", "cu", "h0_kv")]
    return os.path.join(root, hashlib.sha256("|".join(parts).encode()).hexdigest() + ".pt")


def load(path, device):
    """(o, state) from path, or None when there is no such entry (or it cannot be read)."""
    if path is None or not os.path.exists(path):
        return None
    try:
        o, state = torch.load(path, map_location=device)
        return o, state
    except Exception:  # noqa: BLE001 - a torn or foreign file: compute the reference again
        return None


def save(path, o, state):
    """Writes the entry atomically (a file of its own, then a rename); a failed write is dropped."""
    if path is None:
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        torch.save((o.cpu(), state.cpu()), tmp)
        os.replace(tmp, path)
    except OSError:  # a full disk costs the next peer a token loop, never a record
        if os.path.exists(tmp):
            os.remove(tmp)

"""Runs a Mapped peer call on real tensors and reads its results back in gdnbench's terms:
o [rows, HV, V], states [n, HV, K, V] (kv), the mtp cache [n, T, HV, K, V], and how many
elements of pool slots no row names changed (must be 0)."""

import torch

from . import reference_inputs as ri


def _bits(x):
    """The tensor's bit pattern as integers (a NaN equals itself, -0 differs from +0)."""
    return x.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()])


class MappedCall:
    """callable: one peer call with every argument made outside the timed region."""

    def __init__(self, fns, s, mapped, tensors):
        self.fn, self.m, self.s, self.t = fns[mapped.fn], mapped, s, tensors
        self.notes = []
        if mapped.prepare is not None:
            name, *args = mapped.prepare
            if fns.get(name) is not None:
                fns[name](*args)
            else:
                self.notes.append(f"{name} not found in this version: the peer plans from cu_seqlens itself")
        # The reference differs from another variant's only where the peer got a re-expressed gate.
        self.ref_key = "re-expressed gate" if mapped.ref_gate is not None else ""
        # The call overwrites these (pool, state, cache); verification restores them first.
        self.pristine = {n: mapped.kwargs[n].clone() for n in mapped.inplace}

    def __call__(self):
        with torch.no_grad():
            return self.fn(**self.m.kwargs)

    def reset(self):
        for name, x in self.pristine.items():
            self.m.kwargs[name].copy_(x)

    def reference_inputs(self):
        return ri.reference_inputs(self.s, self.t, self.m.ref_gate)

    def _get(self, where, result):
        return self.m.kwargs[where.key] if where.kind == "kwarg" else result[where.key]

    def _state(self, out, result):
        x = self._get(out.where, result)
        if out.slots is not None:
            x = x.index_select(0, out.slots)
        return x.transpose(-1, -2) if out.layout == "vk" else x

    def outputs(self, result):
        """{o, final, intermediate, untouched_diff, untouched_checked} (None where not produced)."""
        s, m = self.s, self.m
        o = self._get(m.o, result)
        if m.o_rows is not None:
            o = o.index_select(0, m.o_rows)
        out = {"o": o.reshape(-1, s["h_v"], s["dv"]), "final": None, "intermediate": None,
               "untouched_diff": None, "untouched_checked": 0}
        if m.final is not None:
            out["final"] = self._state(m.final, result)
        if m.intermediate is not None:
            out["intermediate"] = self._state(m.intermediate, result)[:, : s["tokens"]]
        if m.untouched is not None:
            name, slots, null_slot = m.untouched
            after, before = m.kwargs[name], self.pristine[name]
            keep = torch.ones(after.shape[0], dtype=torch.bool, device=after.device)
            if slots is not None:
                keep[slots] = False
            if null_slot:
                keep[0] = False  # the peer's scratch slot for padding rows, not a gdnbench slot
            a, b = after[keep], before[keep]
            out["untouched_diff"] = int((_bits(a) != _bits(b)).sum())
            out["untouched_checked"] = int(a.numel())
        return out

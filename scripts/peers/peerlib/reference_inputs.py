"""What the reference runs for a point: the rows a peer ran (decode/mtp: every row that names a
pool slot), token-major, with their initial states in kv layout. The same for every peer, from
the point's own inputs (taken before any in-place peer call, or after restoring them)."""

import torch

from . import inputs as inp


def valid_rows(s, t):
    """Row numbers of a decode/mtp point that name a slot, or None when all do."""
    if s["indices"] != "padded":
        return None
    return torch.nonzero(t["indices"] >= 0).flatten()


def reference_inputs(s, t, ref_gate=None):
    """{q, k, v, g, beta, cu, h0_kv}. ref_gate: the raw gate the peer got in place of the
    point's log gate (A_log [HV], a and b over all rows, dt_bias [HV]), or None."""
    if s["op"] == "prefill":
        if s["gate"] == "log":
            g, beta = t["g"], t["beta"]
        else:
            g, beta = inp.gate_from_raw(t["A_log"], t["a"], t["dt_bias"], t["b"])
        h0 = t.get("h0")
        if h0 is not None and s["layout"] == "vk":
            h0 = h0.transpose(-1, -2)
        return {"q": t["q"], "k": t["k"], "v": t["v"], "g": g, "beta": beta, "cu": t["cu_seqlens"], "h0_kv": h0}

    rows = valid_rows(s, t)
    pick = (lambda x: x) if rows is None else (lambda x: x.index_select(0, rows))
    flat = lambda x: pick(x).reshape(-1, *x.shape[2:])  # noqa: E731 - [B, T, ...] -> [rows T, ...]
    gate = ref_gate if ref_gate is not None else (t if s["gate"] == "raw" else None)
    if gate is None:
        g, beta = flat(t["g"]), flat(t["beta"])
    else:
        g, beta = inp.gate_from_raw(gate["A_log"], flat(gate["a"]), gate["dt_bias"], flat(gate["b"]))
    slots = pick(t["indices"])
    h0 = t["pool"].index_select(0, slots).float()
    if s["layout"] == "vk":
        h0 = h0.transpose(-1, -2)
    n, steps = slots.shape[0], t["q"].shape[1]
    return {"q": flat(t["q"]), "k": flat(t["k"]), "v": flat(t["v"]), "g": g, "beta": beta,
            "cu": [i * steps for i in range(n + 1)], "h0_kv": h0}

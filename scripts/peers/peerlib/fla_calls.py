"""One FLA call per (point, variant), built outside the timed region: every tensor FLA reads is
made and laid out first, so a timed call is the FLA function and nothing else.

Signatures used (checked against fla-core 0.6.0, fla/ops/gated_delta_rule/):
  fused_recurrent_gated_delta_rule(q, k, v, g, gk, gv, beta, scale, initial_state,
      output_final_state, use_qk_l2norm_in_kernel, use_gate_in_kernel, A_log, dt_bias,
      use_beta_sigmoid_in_kernel, allow_neg_eigval, state_v_first, cu_seqlens) -> (o, final_state)
  chunk_gated_delta_rule(q, k, v, g, beta, scale, initial_state, output_final_state,
      use_qk_l2norm_in_kernel, use_beta_sigmoid_in_kernel, allow_neg_eigval, state_v_first,
      cu_seqlens, cu_seqlens_cpu, chunk_indices, cp_context, **kwargs: use_gate_in_kernel, A_log,
      dt_bias, chunk_size) -> (o, final_state)
q, k [B, T, H, K]; v [B, T, HV, V]; g, beta [B, T, HV]; states [N, HV, K, V] ([N, HV, V, K] with
state_v_first); varlen means B = 1 and cu_seqlens [N + 1]."""

import torch

from . import inputs as inp
from . import reference_inputs as ri

CHUNK_SIZE = 64


class FlaCall:
    """callable: runs FLA once and returns (o, final_state or None)."""

    def __init__(self, fla, s, plan, t, device):
        self.s = s
        self.vk = s["layout"] == "vk"
        chunk = plan.variant == "fla/chunk"
        self.fn = fla.chunk if chunk else fla.recurrent
        kw = {"scale": s["scale"] if s["scale"] > 0 else None, "use_qk_l2norm_in_kernel": bool(s["l2norm"])}
        if self.vk:
            kw["state_v_first"] = True

        if s["op"] == "prefill":
            rows = None
            q, k, v = (t[n].unsqueeze(0) for n in ("q", "k", "v"))
            cu = t["cu_seqlens"]
            cu_dev = torch.tensor(cu, dtype=torch.int64, device=device)
            kw.update(cu_seqlens=cu_dev, initial_state=t.get("h0"), output_final_state=True)
            if chunk and fla.prepare_chunk_indices is not None:
                cu_cpu = torch.tensor(cu, dtype=torch.int64)
                kw.update(cu_seqlens_cpu=cu_cpu,
                          chunk_indices=fla.prepare_chunk_indices(cu_dev, CHUNK_SIZE, cu_seqlens_cpu=cu_cpu))
        else:
            idx = t["indices"]
            valid = torch.nonzero(idx >= 0).flatten()
            rows = None if s["indices"] != "padded" else valid
            slots = idx.index_select(0, valid)
            pool = t["pool"]
            pick = (lambda x: x) if rows is None else (lambda x: x.index_select(0, rows))
            q, k, v = (pick(t[n]) for n in ("q", "k", "v"))
            identity = s["indices"] == "identity" and pool.shape[0] == s["batch"]
            state = pool if identity else pool.index_select(0, slots)
            keep = s["op"] == "decode" or s["update_state"]
            kw.update(initial_state=state, output_final_state=bool(keep))
        self._pick = (lambda x: x) if rows is None else (lambda x: x.index_select(0, rows))
        lead = (lambda x: x.unsqueeze(0)) if s["op"] == "prefill" else (lambda x: x)

        if s["gate"] == "log":
            g, beta = lead(self._pick(t["g"])), lead(self._pick(t["beta"]))
        elif plan.raw_gate_in_kernel:
            g, beta = lead(self._pick(t["a"])), lead(self._pick(t["b"]))
            kw.update(use_gate_in_kernel=True, A_log=t["A_log"], dt_bias=t["dt_bias"], use_beta_sigmoid_in_kernel=True)
        else:
            g64, b64 = inp.gate_from_raw(t["A_log"], self._pick(t["a"]), t["dt_bias"], self._pick(t["b"]))
            g, beta = lead(g64.float().contiguous()), lead(b64.float().contiguous())
        self.args = (q, k, v)
        self.kwargs = dict(kw, g=g, beta=beta)
        self.t = t

    def __call__(self):
        with torch.no_grad():
            return self.fn(*self.args, **self.kwargs)

    # ---- verification views -------------------------------------------------------------

    def reset(self):
        """Nothing to restore: FLA reads initial_state and writes a new final-state tensor."""

    def reference_inputs(self):
        return ri.reference_inputs(self.s, self.t)

    def outputs(self, result):
        """{o [T, HV, V], final [N, HV, K, V] in kv layout or None} as MappedCall gives them."""
        o, final = result
        o = o.reshape(-1, *o.shape[-2:])
        if final is not None and self.vk:
            final = final.transpose(-1, -2)
        return {"o": o, "final": final, "intermediate": None, "untouched_diff": None, "untouched_checked": 0}

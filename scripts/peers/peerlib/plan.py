"""How (or whether) a peer runs one gdnbench point as one of its variants (pure Python)."""

from dataclasses import dataclass, field


@dataclass
class Plan:
    variant: str
    skip: str = ""                                  # non-empty: skipped, with this reason
    notes: list = field(default_factory=list)       # how the call differs from gdnbench's
    differences: list = field(default_factory=list) # the notes that change what is measured, short
    raw_gate_in_kernel: bool = False                # FLA: else g/beta computed by torch outside timing
    function: str = ""                              # the peer function the variant calls


def prefill_notes(s, p, peer, l2norm_how):
    """The notes every chunked-prefill peer shares: in-call l2norm, and a raw gate turned into
    g and beta before the call (no prefill peer takes the raw gate)."""
    if s["l2norm"]:
        p.notes.append(f"use_qk_l2norm_in_kernel=True: {peer} normalizes q and k {l2norm_how} before its chunk "
                       "kernels, inside the timed call")
    if s["gate"] == "raw":
        p.notes.append(f"raw gate: {peer} takes g and beta only; g = -exp(A_log) softplus(a + dt_bias) and "
                       "beta = sigmoid(b) computed with torch outside the timed region, as vLLM does before its "
                       "prefill call")
        p.differences.append("raw gate computed outside timing")

"""Which FlashQLA call stands in for which gdnbench point, and what differs (pure Python).

Checked against flash-qla 0.1.3 (flash_qla/ops/gated_delta_rule/chunk/__init__.py,
hopper/fused_fwd.py): chunk_gated_delta_rule(q, k, v, g, beta, scale, initial_state,
output_final_state, use_qk_l2norm_in_kernel, cu_seqlens, head_first, state_v_first, auto_cp,
enable_fwd_cp_cache, cp_context, force_intra_cp) -> (o, final_state). FLA's conventions: log-space
g, varlen as B = 1 with cu_seqlens (int64), states [N, HV, K, V] or [N, HV, V, K] with
state_v_first; the final state is fp32. bf16/f16 inputs, K = V = 128 (fused_fwd asserts it).
TileLang compiles each kernel at its first call per shape class (10-20 s on an H200)."""

from .plan import Plan, prefill_notes

VARIANTS = {"prefill": ["flashqla/chunk"], "decode": [], "mtp": []}
FUNCTIONS = {"flashqla/chunk": "chunk_gated_delta_rule"}
HEAD_DIM = 128


def plan_point(shape, variant, caps=None):
    """How (or whether) FlashQLA runs this normalized gdnbench shape. caps: {variant: reason}
    of what did not import (None: all did)."""
    s = shape
    p = Plan(variant, function=FUNCTIONS[variant])
    if caps and variant in caps:
        p.skip = caps[variant]
        return p
    if s["op"] != "prefill":
        p.skip = "FlashQLA has chunked prefill only"
        return p
    if s.get("pool", 0) > 0:
        p.skip = "the pool form (a state pool named by indices): FlashQLA's prefill takes dense initial states only"
        return p
    if s["input_dtype"] not in ("bf16", "f16"):
        p.skip = f"FlashQLA takes bf16/f16 inputs only (got {s['input_dtype']})"
        return p
    if s["dk"] != HEAD_DIM or s["dv"] != HEAD_DIM:
        p.skip = f"FlashQLA's kernels are built for K = V = {HEAD_DIM} (got {s['dk']}x{s['dv']})"
        return p
    p.notes.append("varlen: B = 1 packed with cu_seqlens (int64); prepare_varlen_metadata (chunk offsets and "
                   "indices from the host lengths) attached outside the timed region, as a serving engine does")
    p.notes.append("auto_cp=True: FlashQLA's intra-card context parallelism, its plan cached per cu_seqlens "
                   "tensor (made at warm-up)")
    p.notes.append(("vk layout through state_v_first=True" if s["layout"] == "vk"
                    else "kv layout (state_v_first=False)") + "; FlashQLA allocates o and the fp32 final state")
    prefill_notes(s, p, "FlashQLA", "with torch.compile'd kernels")
    p.notes.append("warm-up includes TileLang's per-shape compilation (not timed)")
    return p

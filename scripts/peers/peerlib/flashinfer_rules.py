"""Which FlashInfer function stands in for which gdnbench point, and what differs (pure Python).

Checked against flashinfer-python 0.7.2.post1 (flashinfer/gdn_decode.py, gdn_prefill.py):
- gated_delta_rule_decode_pretranspose: T = 1, vk state. fp32: `state=` [B, HV, V, K] or the
  pool form (initial_state + initial_state_indices; -1 = zero output row, no slot touched);
  K, V >= 128, V % 8 == 0. bf16 (K = V = 128): pool only, also T > 1 (its BF16 MTP kernel,
  intermediate cache in bf16); -1 reads and writes slot 0, a "null buffer" the caller reserves.
- gated_delta_rule_decode: T = 1, kv state [B, HV, K, V], fp32, no pool; V % 32 == 0.
- gated_delta_rule_mtp: T > 1, fp32 vk pool with indices (-1: no read, no write-back);
  intermediate_states_buffer fp32 [B, T, HV, V, K]; disable_state_update.
- gdn_prefill.chunk_gated_delta_rule: varlen [T, H, K] with cu_seqlens; g is the linear decay
  alpha = exp(g); states [N, HV, V, K] (kv points get h0 transposed outside timing); one head
  size (K = V) up to 128 (SM90 kernel).
The decode and mtp functions take only the raw gate (A_log, a, dt_bias, b), the prefill one
only g and beta."""

from .plan import Plan, prefill_notes

VARIANTS = {
    "prefill": ["flashinfer/chunk"],
    "decode": ["flashinfer/decode_pretranspose", "flashinfer/decode"],
    "mtp": ["flashinfer/mtp", "flashinfer/decode_pretranspose"],
}

FUNCTIONS = {
    "flashinfer/chunk": "chunk_gated_delta_rule",
    "flashinfer/decode_pretranspose": "gated_delta_rule_decode_pretranspose",
    "flashinfer/decode": "gated_delta_rule_decode",
    "flashinfer/mtp": "gated_delta_rule_mtp",
}

# Variants whose function takes `backend`; the harness pins it (gated_delta_rule_mtp has none, and
# the prefill's default 'auto' is FlashInfer's own kernels unless Cake is asked for by name).
BACKEND_ARGUMENT = ("flashinfer/decode_pretranspose", "flashinfer/decode")

PREFILL_MAX_HEAD = 128  # _FullyFusedDeltaRuleSm90.can_implement: head_size <= 128, % 8


def uses_state_argument(s):
    """fp32 vk decode with identity indices over a pool of B slots: the pool is the dense
    per-row state, FlashInfer's `state=` form."""
    return s["state_dtype"] == "f32" and s["indices"] == "identity" and s["pool"] in (0, s["batch"])


def _gate_notes(s, p):
    if s["gate"] == "raw":
        p.notes.append("raw gate native: A_log [HV] fp32, a and b [B, T, HV] bf16, dt_bias [HV] fp32, as vLLM "
                       "passes them")
        return
    p.notes.append("log gate re-expressed as FlashInfer's raw gate (its decode takes no other): A_log = 0, "
                   "dt_bias = 0, a = log(expm1(-g)), b = logit(beta), both rounded to bf16; verified against the "
                   "g and beta those values give")
    p.differences.append("log gate passed as an equivalent raw gate")


def _pool_notes(s, p, padding_slot0):
    p.notes.append("pool form: initial_state = the pool, initial_state_indices = the rows' slots "
                   f"({s['index_dtype']}), updated in place")
    if s["indices"] == "padded":
        if padding_slot0:
            p.notes.append("padding rows (-1): FlashInfer's bf16 path reads and writes pool slot 0 for them, so the "
                           "pool is passed with an extra null slot 0 in front (slot i of gdnbench is slot i + 1); "
                           "their output rows are undefined and not verified")
            p.differences.append("bf16 pool behind a null slot 0")
        else:
            p.notes.append("padding rows (-1): native (no slot read or written); their output rows are not verified")


def _decode_dims(s, p, v_multiple):
    if s["dk"] < 128 or s["dv"] < 128 or s["dv"] % v_multiple:
        p.skip = f"FlashInfer's fp32 decode kernels need K, V >= 128 and V % {v_multiple} == 0 (got {s['dk']}x{s['dv']})"
    return not p.skip


def _bf16_dims(s, p):
    if s["dk"] != 128 or s["dv"] != 128:
        p.skip = f"FlashInfer's bf16-state kernels are built for K = V = 128 (got {s['dk']}x{s['dv']})"
    return not p.skip


def _prefill(s, p):
    if s.get("pool", 0) > 0:
        p.skip = "the pool form (a state pool named by indices): FlashInfer's prefill takes dense initial states only"
        return p
    if s["dk"] != s["dv"] or s["dk"] > PREFILL_MAX_HEAD or s["dk"] % 8:
        p.skip = (f"FlashInfer's SM90 prefill takes one head size up to {PREFILL_MAX_HEAD}, a multiple of 8 "
                  f"(got {s['dk']}x{s['dv']})")
        return
    if sum(s["seqlens"]) == 0:
        p.skip = "no tokens: FlashInfer's prefill needs max_seqlen > 0"
        return
    p.notes.append("varlen: q, k, v [T, H, K] packed, cu_seqlens int32, max_seqlen = the longest sequence "
                   "(FlashInfer's host hint: its context-parallel planning reads no device memory)")
    p.notes.append("g passed as FlashInfer's linear decay alpha = exp(g) (fp32 [T, HV], made outside the timed region)")
    if s["layout"] == "kv":
        p.notes.append("kv point: FlashInfer's prefill states are [N, HV, V, K] (vk), so h0 is passed transposed (a "
                       "copy made outside the timed region) and ht read back transposed; the kernel moves the same "
                       "bytes")
        p.differences.append("kv state passed transposed (FlashInfer keeps vk)")
    p.notes.append("use_cp='auto' (FlashInfer chooses context parallelism from the shape); caller-owned output and "
                   "output_state (fp32 [N, HV, V, K])")
    prefill_notes(s, p, "FlashInfer", "in kernels of its own")


def _decode_pretranspose(s, p):
    if s["layout"] != "vk":
        p.skip = "gated_delta_rule_decode_pretranspose takes the vk state [.., HV, V, K]; kv runs as flashinfer/decode"
        return
    if s["state_dtype"] == "bf16":
        if _bf16_dims(s, p):
            _pool_notes(s, p, padding_slot0=True)
        return
    if not _decode_dims(s, p, 8):
        return
    if uses_state_argument(s):
        p.notes.append("fp32 `state=` form: the pool is the dense [B, HV, V, K] state (identity indices, P = B), "
                       "updated in place")
    else:
        _pool_notes(s, p, padding_slot0=False)


def _decode_kv(s, p):
    if s["layout"] != "kv":
        p.skip = "gated_delta_rule_decode takes the kv state [B, HV, K, V]; vk runs as flashinfer/decode_pretranspose"
        return
    if s["state_dtype"] != "f32":
        p.skip = "gated_delta_rule_decode keeps fp32 states only"
        return
    if not _decode_dims(s, p, 32):
        return
    if s["indices"] == "identity" and s["pool"] in (0, s["batch"]):
        p.notes.append("state: the pool itself (identity indices, P = B), updated in place")
        return
    p.notes.append("no pool in gated_delta_rule_decode: the named slots are gathered into a dense state outside "
                   "the timed region and updated in place there (same bytes: B states read, B written)")
    p.differences.append("pool slots gathered outside timing")
    if s["indices"] == "padded":
        p.notes.append("padding rows (index -1) dropped before the call: FlashInfer runs the valid rows only")
        p.differences.append("padding rows dropped")


def _mtp_common(s, p):
    if s["rollback"]:
        p.skip = "FlashInfer's public MTP functions have no rollback start (a cache entry per accepted prefix)"
        return False
    if s["layout"] != "vk":
        p.skip = "FlashInfer's MTP kernels take the vk pool [P, HV, V, K] only"
        return False
    return True


def _mtp_notes(s, p, dtype):
    if s["cache_intermediate"]:
        p.notes.append(f"intermediate_states_buffer {dtype} [B, T, HV, V, K] (caller-owned, indexed by row)")
    p.notes.append(f"disable_state_update={not s['update_state']}")


def _mtp(s, p):
    if not _mtp_common(s, p):
        return
    if s["state_dtype"] != "f32":
        p.skip = "gated_delta_rule_mtp takes fp32 pools; bf16 pools run as flashinfer/decode_pretranspose"
        return
    if not _decode_dims(s, p, 8):
        return
    _pool_notes(s, p, padding_slot0=False)
    _mtp_notes(s, p, "fp32")


def _mtp_bf16(s, p):
    if s["state_dtype"] != "bf16":
        p.skip = "fp32 pools with T > 1 route to gated_delta_rule_mtp: see flashinfer/mtp"
        return
    if not _mtp_common(s, p) or not _bf16_dims(s, p):
        return
    p.notes.append("bf16 pool with T > 1: gated_delta_rule_decode_pretranspose routes to FlashInfer's BF16 MTP kernel")
    _pool_notes(s, p, padding_slot0=True)
    _mtp_notes(s, p, "bf16")


RULES = {
    ("prefill", "flashinfer/chunk"): _prefill,
    ("decode", "flashinfer/decode_pretranspose"): _decode_pretranspose,
    ("decode", "flashinfer/decode"): _decode_kv,
    ("mtp", "flashinfer/mtp"): _mtp,
    ("mtp", "flashinfer/decode_pretranspose"): _mtp_bf16,
}


def plan_point(shape, variant, caps=None):
    """How (or whether) FlashInfer runs this normalized gdnbench shape as `variant`. caps: the
    loaded FlashInfer's {variant or (variant, state dtype): reason} of kernels that did not load
    (None: all did)."""
    s = shape
    p = Plan(variant, function=FUNCTIONS[variant])
    if s["input_dtype"] not in ("bf16", "f16"):
        p.skip = f"FlashInfer's GDN kernels take bf16/f16 inputs only (got {s['input_dtype']})"
        return p
    RULES[(s["op"], variant)](s, p)
    for key in (variant, (variant, s["state_dtype"])):
        if not p.skip and caps and key in caps:
            p.skip = caps[key]
    if p.skip:
        return p
    if s["op"] != "prefill":
        _gate_notes(s, p)
        p.notes.append("caller-owned bf16 output [B, T, HV, V] (FlashInfer's decode kernels write bf16)")
    if variant in BACKEND_ARGUMENT:
        p.notes.append("backend='flashinfer': its CuTe-DSL kernels (Cake GDN, the other choice of 'auto', is sm_100-only)")
    return p

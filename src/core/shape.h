// One benchmark problem: the op and every axis value of one expanded sweep point.
// The same struct serves all three ops; fields an op does not use keep their defaults and
// are left out of its key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"

namespace gdn {

struct Shape {
  OpKind op = OpKind::prefill;

  // Heads: h_qk q/k heads, h_v value heads (h_v % h_qk == 0); head dims K and V.
  int h_qk = 16;
  int h_v = 32;
  int dk = 128;
  int dv = 128;

  DType input_dtype = DType::bf16;  // q, k, v, o (bf16; f16 where a variant supports it)
  bool l2norm = true;
  GateForm gate = GateForm::log;
  InputDist inputs = InputDist::standard;
  double scale = 0.0;  // 0 means the default K^-1/2

  // prefill: one length per packed sequence; has_h0 = initial state given.
  std::vector<int64_t> seqlens;
  bool has_h0 = true;

  // decode / mtp: batch rows, tokens per row (1 for decode), state pool.
  int64_t batch = 1;
  int tokens = 1;  // mtp T
  DType state_dtype = DType::f32;
  Layout layout = Layout::vk;
  int64_t pool = 0;  // pool slots P; 0 means P = batch (decode / mtp), the dense h0 / ht form (prefill)
  IndexPattern indices = IndexPattern::identity;
  DType index_dtype = DType::i64;
  bool cache_intermediate = false;  // mtp
  bool update_state = true;         // mtp
  // mtp: the vLLM-style rollback input. accepted[B] (int32, 0..T) says how many of the previous
  // step's T tokens were accepted; a row with a > 0 starts from intermediate[b, a - 1] (the
  // previous step's cache, read before this step overwrites it) instead of its pool slot.
  bool rollback = false;
  // prefill, pool form: state checkpoints inside each sequence (docs/method.md 2.4), after every
  // checkpoint_every tokens (a multiple of 64; 0: none) or at each sequence's explicit positions.
  int64_t checkpoint_every = 0;
  std::vector<std::vector<int64_t>> checkpoint_at;
  bool has_checkpoints() const { return checkpoint_every > 0 || !checkpoint_at.empty(); }

  // The plan axis (docs/plans.md): "" runs each variant's default plan; otherwise
  // "knob=value,..." over the knobs the variant declares (Variant::knobs), e.g. "schedule=fused".
  std::string plan;

  // Derived values.
  double effective_scale() const;
  int64_t pool_slots() const { return pool > 0 ? pool : num_sequences(); }
  // prefill in the pool form (docs/method.md 2.1): states in a slot pool named by indices, not h0 / ht.
  bool prefill_pool() const { return op == OpKind::prefill && pool > 0; }
  int64_t total_tokens() const;  // prefill: sum of seqlens; decode: batch; mtp: batch * tokens
  int64_t num_sequences() const { return op == OpKind::prefill ? int64_t(seqlens.size()) : batch; }
  int group() const { return h_v / h_qk; }  // value heads per q/k head

  // Canonical, human-readable key of every axis that matters for this op. Two shapes with the
  // same key are the same problem; compare matches cases by (op, variant, key, mode, device).
  std::string key() const;
  // Compact sequence-set label: "1x8192", "4096x8" (4 sequences of 4096), "100+200+37".
  std::string seqlens_label() const;
};

// Parses a sequence set: "1x32768" / "8192x4" (FlashQLA notation: the smaller factor counts
// sequences, the larger is their length; equal factors N x N are N sequences of N tokens),
// "28672+4096" (explicit lengths). Throws std::invalid_argument with a reason on bad text.
std::vector<int64_t> parse_seqlens(const std::string& text);

}  // namespace gdn

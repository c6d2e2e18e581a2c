// fp64 Eigen references for the three ops (docs/method.md 1, 2 and 6). Inputs are the exact host
// tensors a variant saw (bf16/fp16/fp32 values widened to double), so differences measure only
// the variant's arithmetic. Threaded over (sequence or row) x value head.
#pragma once

#include <cstdint>
#include <vector>

#include "core/shape.h"
#include "core/tensor.h"

namespace gdn::ref {

// Which value heads and which sequences (prefill) or rows (decode/mtp) to compute. Empty
// vectors mean all. Large cases verify a deterministic sample of whole sequences and heads.
struct Selection {
  std::vector<int> heads;
  std::vector<int64_t> seqs;
  bool all() const { return heads.empty() && seqs.empty(); }
};

// Full-size result arrays in the tensors' own layouts; elements outside the selection are NaN.
struct PrefillResult {
  std::vector<double> o;   // [T, HV, V]
  std::vector<double> ht;  // [N, HV, (layout)]
  // The state after each checkpoint position (docs/method.md 2.4), [N, J, HV, (layout)], with
  // J = checkpoint_columns(shape); empty without checkpoints, NaN past a sequence's checkpoints.
  std::vector<double> checkpoints;
};

// Token recurrence (the oracle).
PrefillResult prefill_recurrent(const Shape& s, const TensorSet& in, const Selection& sel = {}, int threads = 0);
// Chunked form of docs/method.md 6 with chunk size C (must agree with the recurrence to ~1e-10).
PrefillResult prefill_chunked(const Shape& s, const TensorSet& in, int chunk = 64, const Selection& sel = {},
                              int threads = 0);

// decode and mtp. Rows whose index is -1 are padding: o (and intermediate) rows are 0.
struct StepResult {
  std::vector<double> o;             // [B, T, HV, V]
  std::vector<double> state;         // [B, HV, (layout)]: state after the last token, per row
  std::vector<double> intermediate;  // [B, T, HV, (layout)] when cache_intermediate, else empty
};
StepResult step(const Shape& s, const TensorSet& in, const Selection& sel = {}, int threads = 0);

// Effective decay g and beta (double) of token row r, value head h, from either gate form.
struct GateValue {
  double g, beta;
};
GateValue gate_at(const Shape& s, const TensorSet& in, int64_t row, int head);

// Reads element i of a float tensor (f32, bf16 or f16) as double.
double load(const Tensor& t, int64_t i);
// Element i of a state tensor as a value: load(t, i), or for an 8-bit pool (vk: rows of K codes,
// t.spec.dims.back() = K) its code times the row's scale in `row_scales` (docs/method.md 2.5).
double load_state_value(const Tensor& t, const Tensor* row_scales, int64_t i);

}  // namespace gdn::ref

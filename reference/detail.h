// Private helpers shared by the reference implementations (not part of the public interface).
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/shape.h"
#include "core/tensor.h"
#include "reference/reference.h"

namespace gdn::ref::detail {

using Mat = Eigen::MatrixXd;  // the state S is K x V, column-major (= the vk memory order)
using Vec = Eigen::VectorXd;

// Head geometry and per-token options of a shape.
struct Dims {
  int H, HV, K, V, group;
  double scale;
  bool l2norm;
  explicit Dims(const Shape& s);
  int64_t state_size() const { return int64_t(K) * V; }
};

// n elements of a float tensor starting at `offset`, widened to double.
void load_into(const Tensor& t, int64_t offset, int n, double* dst);
// x / sqrt(sum x^2 + kL2NormEps), as the kernels' in-kernel L2 norm.
void l2normalize(double* x, int n);
// q or k of token row `row` and q/k head `hk`, normalised when the shape asks for it.
void load_qk(const Tensor& t, const Dims& d, int64_t row, int hk, double* dst);

// State of K x V elements stored at `offset` of `t` in `layout`.
Mat load_state(const Tensor& t, int64_t offset, Layout layout, int K, int V);
// An 8-bit state (vk: K codes per value row) at `offset` of `codes`, its rows' scales in `scales`.
Mat load_quantized_state(const Tensor& codes, const Tensor& scales, int64_t offset, int K, int V);
// What storing S in an 8-bit pool keeps: every value row (column v of S, K values) rounded to
// fp32 and sent through quantize / dequantize (core/state_quant.h).
Mat quantized(const Mat& S, DType format);
// Writes S into a result array in `layout`.
void store_state(const Mat& S, Layout layout, double* dst);

// One token of the recurrence (docs/method.md 1): S <- e^g S; d = beta (v - S^T k);
// S <- S + k d^T; o = scale S^T q. p and d are scratch vectors of size V.
void recurrent_token(Mat& S, const Vec& q, const Vec& k, const Vec& v, double g, double beta, double scale, Vec& o,
                     Vec& p, Vec& d);

// The selected heads / items (sorted, checked against the bounds), all when the list is empty.
std::vector<int> resolve_heads(const std::vector<int>& heads, int HV);
std::vector<int64_t> resolve_items(const std::vector<int64_t>& items, int64_t n, const char* what);

// Start offsets of the packed sequences (N + 1 entries), from Shape::seqlens; checked against
// the cu_seqlens tensor when it is present.
std::vector<int64_t> sequence_starts(const Shape& s, const TensorSet& in);

// Scratch vectors of one token step (recurrent_row), reused across tokens.
struct TokenScratch {
  Vec q, k, v, o, p, d;
  explicit TokenScratch(const Dims& dims);
};
// Token row `row` of value head h through recurrent_token: q and k of its q/k head, v and the
// gate of (row, h) from the inputs; o (V values) is written to o_row.
void recurrent_row(Mat& S, const Shape& s, const TensorSet& in, const Dims& d, int64_t row, int h, TokenScratch& w,
                   double* o_row);

// What both prefill references share: the geometry, the packed sequence starts, the selected
// (sequence, value head) pairs and a result whose unselected entries stay NaN; run() calls
// f(n, h, S) for every selected pair on up to `threads` threads with S the sequence's initial
// state (h0, its pool slot widened, or zero) and stores S into ht after (in the pool form as the
// pool keeps it: stored()).
struct PrefillPlan {
  const Shape& s;
  const TensorSet& in;
  Dims d;
  std::vector<int64_t> cu;  // sequence starts, N + 1 entries
  std::vector<int> heads;
  std::vector<int64_t> seqs;
  int64_t J = 0;                                   // checkpoint columns
  std::vector<std::vector<int64_t>> checkpoints;   // positions per sequence, from its start
  PrefillPlan(const Shape& shape, const TensorSet& inputs, const Selection& sel);
  // What the pool keeps of a state it stores: S, or for an 8-bit pool its quantized values
  // (docs/method.md 2.5); the running state between tokens is never quantized.
  Mat stored(const Mat& S) const;
  // Stores S as checkpoint j of (sequence n, head h), as the pool keeps it.
  void save_checkpoint(int64_t n, int h, int64_t j, const Mat& S, PrefillResult& r) const;
  PrefillResult run(int threads, const std::function<void(int64_t n, int h, Mat& S, PrefillResult& r)>& f) const;
};

}  // namespace gdn::ref::detail

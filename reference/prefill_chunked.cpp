// The chunked form of docs/method.md 6 in fp64: the fast reference for long sequences.
//
// Per chunk of c <= C tokens (gam = chunk-local inclusive cumsum of g, G = gam[c-1]):
//   A   = StrictLower(diag(beta) K K^T) * Gam       Gam_ij = exp(gam_i - gam_j), i >= j
//   U'  = (I + A)^-1 diag(beta) (V - diag(e^gam) K S0)       (= u - w S0, one triangular solve)
//   O   = scale (diag(e^gam) Q S0 + (Gam_incl * Q K^T) U')
//   S1  = e^G S0 + K^T diag(e^(G - gam)) U'
// g <= 0 makes gam non-increasing, so every exponent here is <= 0 and nothing overflows; the
// triangles are built with selects, never by multiplying an overflowed value by a zero mask.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "reference/detail.h"
#include "reference/reference.h"

namespace gdn::ref {
namespace {

using detail::Mat;
using detail::Vec;
using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Inputs {
  const Shape& s;
  const TensorSet& in;
  const detail::Dims& d;
  const Tensor &q, &k, &v;
};

// One chunk's rows [row0, row0 + c) of value head h, gathered and widened.
struct Chunk {
  RowMat Q, K, V;
  Vec beta, gam;
  Chunk(const Inputs& x, int64_t row0, int c, int h) : Q(c, x.d.K), K(c, x.d.K), V(c, x.d.V), beta(c), gam(c) {
    const int hk = h / x.d.group;
    double acc = 0;
    for (int i = 0; i < c; ++i) {
      const int64_t row = row0 + i;
      detail::load_qk(x.q, x.d, row, hk, Q.row(i).data());
      detail::load_qk(x.k, x.d, row, hk, K.row(i).data());
      detail::load_into(x.v, (row * x.d.HV + h) * x.d.V, x.d.V, V.row(i).data());
      const GateValue gate = gate_at(x.s, x.in, row, h);
      acc += gate.g;
      gam(i) = acc;
      beta(i) = gate.beta;
    }
  }
};

// Advances S over one chunk and writes the chunk's outputs (c rows of V) to `o` with row stride.
void chunk_step(const Chunk& ch, double scale, Mat& S, double* o, int64_t o_stride) {
  const int c = int(ch.gam.size());
  const double G = ch.gam(c - 1);
  const Vec e_gam = ch.gam.array().exp();
  const Vec e_tail = (G - ch.gam.array()).exp();

  const Mat KS = ch.K * S, QS = ch.Q * S;
  const Mat KK = ch.K * ch.K.transpose(), QK = ch.Q * ch.K.transpose();
  Mat A = Mat::Zero(c, c), P = Mat::Zero(c, c);
  for (int j = 0; j < c; ++j)
    for (int i = j; i < c; ++i) {
      const double decay = std::exp(ch.gam(i) - ch.gam(j));
      P(i, j) = QK(i, j) * decay;
      if (i > j) A(i, j) = ch.beta(i) * KK(i, j) * decay;
    }
  // UnitLower reads only the strict lower part of A and takes the diagonal as 1: (I + A).
  const Mat rhs = ch.beta.asDiagonal() * (ch.V - e_gam.asDiagonal() * KS);
  const Mat U = A.triangularView<Eigen::UnitLower>().solve(rhs);

  const Mat O = scale * (e_gam.asDiagonal() * QS + P * U);
  S = std::exp(G) * S + ch.K.transpose() * (e_tail.asDiagonal() * U);
  for (int i = 0; i < c; ++i)
    for (int vv = 0; vv < int(O.cols()); ++vv) o[i * o_stride + vv] = O(i, vv);
}

}  // namespace

PrefillResult prefill_chunked(const Shape& s, const TensorSet& in, int chunk, const Selection& sel, int threads) {
  if (chunk < 1) throw std::invalid_argument("chunk size must be >= 1 (got " + std::to_string(chunk) + ")");
  const detail::PrefillPlan plan(s, in, sel);
  const detail::Dims& d = plan.d;
  const Inputs x{s, in, d, in.at("q"), in.at("k"), in.at("v")};
  return plan.run(threads, [&](int64_t n, int h, Mat& S, PrefillResult& r) {
    // A chunk also ends at each checkpoint, whose state is then in hand.
    const int64_t start = plan.cu[size_t(n)], end = plan.cu[size_t(n) + 1];
    const auto& at = plan.checkpoints[size_t(n)];
    size_t j = 0;
    for (int64_t row0 = start; row0 < end;) {
      const int64_t stop = j < at.size() ? start + at[j] : end;
      const int c = int(std::min<int64_t>(chunk, stop - row0));
      const Chunk ch(x, row0, c, h);
      chunk_step(ch, d.scale, S, r.o.data() + (row0 * d.HV + h) * d.V, int64_t(d.HV) * d.V);
      row0 += c;
      if (row0 == stop && j < at.size()) plan.save_checkpoint(n, h, int64_t(j++), S, r);
    }
  });
}

}  // namespace gdn::ref

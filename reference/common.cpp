// Helpers shared by the references: exact loads, gates, state layouts, selection, threads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/checkpoints.h"
#include "core/half.h"
#include "core/parallel_for.h"
#include "core/slot.h"
#include "core/state_quant.h"
#include "reference/detail.h"
#include "reference/reference.h"

namespace gdn::ref {

double load(const Tensor& t, int64_t i) {
  switch (t.spec.dtype) {
    case DType::f32: return double(t.as<const float>()[i]);
    case DType::bf16: return double(bf16_to_float(t.as<const uint16_t>()[i]));
    case DType::f16: return double(f16_to_float(t.as<const uint16_t>()[i]));
    case DType::i32: return double(t.as<const int32_t>()[i]);
    case DType::i64: return double(t.as<const int64_t>()[i]);
    case DType::fp8e4m3:
    case DType::i8: return double(quant::decode(t.spec.dtype, t.as<const uint8_t>()[i]));  // the code, unscaled
  }
  throw std::logic_error("unknown dtype");
}

GateValue gate_at(const Shape& s, const TensorSet& in, int64_t row, int head) {
  const int64_t i = row * s.h_v + head;
  if (s.gate == GateForm::log) return {load(in.at("g"), i), load(in.at("beta"), i)};
  // raw: g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b), in double from the stored values.
  const double x = load(in.at("a"), i) + load(in.at("dt_bias"), head);
  const double softplus = x > 20.0 ? x : std::log1p(std::exp(x));
  const double g = -std::exp(load(in.at("A_log"), head)) * softplus;
  const double beta = 1.0 / (1.0 + std::exp(-load(in.at("b"), i)));
  return {g, beta};
}

namespace detail {

Dims::Dims(const Shape& s)
    : H(s.h_qk), HV(s.h_v), K(s.dk), V(s.dv), group(s.h_v / s.h_qk), scale(s.effective_scale()), l2norm(s.l2norm) {
  if (H < 1 || HV % H != 0)
    throw std::invalid_argument("reference needs h_v % h_qk == 0 (got " + std::to_string(H) + "/" +
                                std::to_string(HV) + ")");
}

void load_into(const Tensor& t, int64_t offset, int n, double* dst) {
  switch (t.spec.dtype) {
    case DType::f32: {
      const float* p = t.as<const float>() + offset;
      for (int i = 0; i < n; ++i) dst[i] = double(p[i]);
      return;
    }
    case DType::bf16: {
      const uint16_t* p = t.as<const uint16_t>() + offset;
      for (int i = 0; i < n; ++i) dst[i] = double(bf16_to_float(p[i]));
      return;
    }
    case DType::f16: {
      const uint16_t* p = t.as<const uint16_t>() + offset;
      for (int i = 0; i < n; ++i) dst[i] = double(f16_to_float(p[i]));
      return;
    }
    default: break;
  }
  throw std::invalid_argument("tensor '" + t.spec.name + "' must be f32, bf16 or f16 for the reference");
}

void l2normalize(double* x, int n) {
  double ss = 0;
  for (int i = 0; i < n; ++i) ss += x[i] * x[i];
  const double r = 1.0 / std::sqrt(ss + kL2NormEps);
  for (int i = 0; i < n; ++i) x[i] *= r;
}

void load_qk(const Tensor& t, const Dims& d, int64_t row, int hk, double* dst) {
  load_into(t, (row * d.H + hk) * d.K, d.K, dst);
  if (d.l2norm) l2normalize(dst, d.K);
}

Mat load_state(const Tensor& t, int64_t offset, Layout layout, int K, int V) {
  Mat S(K, V);
  if (layout == Layout::vk) {
    load_into(t, offset, K * V, S.data());  // [V][K] is exactly column-major K x V
  } else {
    std::vector<double> row(static_cast<size_t>(V));
    for (int k = 0; k < K; ++k) {
      load_into(t, offset + int64_t(k) * V, V, row.data());
      for (int v = 0; v < V; ++v) S(k, v) = row[size_t(v)];
    }
  }
  return S;
}

void store_state(const Mat& S, Layout layout, double* dst) {
  const int K = int(S.rows()), V = int(S.cols());
  if (layout == Layout::vk) std::copy(S.data(), S.data() + int64_t(K) * V, dst);
  else
    for (int k = 0; k < K; ++k)
      for (int v = 0; v < V; ++v) dst[int64_t(k) * V + v] = S(k, v);
}

void recurrent_token(Mat& S, const Vec& q, const Vec& k, const Vec& v, double g, double beta, double scale, Vec& o,
                     Vec& p, Vec& d) {
  S *= std::exp(g);
  p.noalias() = S.transpose() * k;
  d = beta * (v - p);
  S.noalias() += k * d.transpose();
  o.noalias() = S.transpose() * q;
  o *= scale;
}

std::vector<int> resolve_heads(const std::vector<int>& heads, int HV) {
  std::vector<int> out = heads;
  if (out.empty())
    for (int h = 0; h < HV; ++h) out.push_back(h);
  for (int h : out)
    if (h < 0 || h >= HV)
      throw std::out_of_range("selected head " + std::to_string(h) + " outside 0.." + std::to_string(HV - 1));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int64_t> resolve_items(const std::vector<int64_t>& items, int64_t n, const char* what) {
  std::vector<int64_t> out = items;
  if (out.empty())
    for (int64_t i = 0; i < n; ++i) out.push_back(i);
  for (int64_t i : out)
    if (i < 0 || i >= n)
      throw std::out_of_range(std::string("selected ") + what + " " + std::to_string(i) + " outside 0.." +
                              std::to_string(n - 1));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int64_t> sequence_starts(const Shape& s, const TensorSet& in) {
  std::vector<int64_t> cu(s.seqlens.size() + 1, 0);
  for (size_t i = 0; i < s.seqlens.size(); ++i) cu[i + 1] = cu[i] + s.seqlens[i];
  if (in.has("cu_seqlens")) {
    const Tensor& t = in.at("cu_seqlens");
    if (t.numel() != int64_t(cu.size())) throw std::invalid_argument("cu_seqlens does not match the shape's sequences");
    for (size_t i = 0; i < cu.size(); ++i)
      if (int64_t(load(t, int64_t(i))) != cu[i])
        throw std::invalid_argument("cu_seqlens[" + std::to_string(i) + "] = " +
                                    std::to_string(int64_t(load(t, int64_t(i)))) + ", the shape says " +
                                    std::to_string(cu[i]));
  }
  return cu;
}

TokenScratch::TokenScratch(const Dims& dims)
    : q(dims.K), k(dims.K), v(dims.V), o(dims.V), p(dims.V), d(dims.V) {}

void recurrent_row(Mat& S, const Shape& s, const TensorSet& in, const Dims& d, int64_t row, int h, TokenScratch& w,
                   double* o_row) {
  const int hk = h / d.group;
  load_qk(in.at("q"), d, row, hk, w.q.data());
  load_qk(in.at("k"), d, row, hk, w.k.data());
  load_into(in.at("v"), (row * d.HV + h) * d.V, d.V, w.v.data());
  const GateValue gate = gate_at(s, in, row, h);
  recurrent_token(S, w.q, w.k, w.v, gate.g, gate.beta, d.scale, w.o, w.p, w.d);
  std::copy(w.o.data(), w.o.data() + d.V, o_row);
}

PrefillPlan::PrefillPlan(const Shape& shape, const TensorSet& inputs, const Selection& sel)
    : s(shape),
      in(inputs),
      d(shape),
      cu(sequence_starts(shape, inputs)),
      heads(resolve_heads(sel.heads, d.HV)),
      seqs(resolve_items(sel.seqs, int64_t(shape.seqlens.size()), "sequence")),
      J(checkpoint_columns(shape)) {
  for (int64_t n = 0; n < int64_t(shape.seqlens.size()); ++n) checkpoints.push_back(checkpoint_positions(shape, n));
}

Mat PrefillPlan::stored(const Mat& S) const {
  return quant::is_8bit(s.state_dtype) ? quantized(S, s.state_dtype) : S;
}

void PrefillPlan::save_checkpoint(int64_t n, int h, int64_t j, const Mat& S, PrefillResult& r) const {
  store_state(stored(S), s.layout, r.checkpoints.data() + ((n * J + j) * d.HV + h) * d.state_size());
}

PrefillResult PrefillPlan::run(int threads, const std::function<void(int64_t, int, Mat&, PrefillResult&)>& f) const {
  const int64_t N = int64_t(s.seqlens.size()), T = cu.back(), KV = d.state_size();
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  PrefillResult r;
  r.o.assign(size_t(T * d.HV * d.V), nan);
  r.ht.assign(size_t(N * d.HV * KV), nan);
  r.checkpoints.assign(size_t(N * J * d.HV * KV), nan);
  const Tensor* h0 = in.has("h0") ? &in.at("h0") : nullptr;
  // The pool form: sequence n starts from slot indices[n] (-1: from zero).
  const Tensor* pool = s.prefill_pool() ? &in.at("pool") : nullptr;
  const Tensor* idx = s.prefill_pool() ? &in.at("indices") : nullptr;
  const int64_t tasks = int64_t(seqs.size()) * int64_t(heads.size());
  parallel_for(tasks, worker_count(tasks, threads), [&](int64_t task, int) {
    const int64_t n = seqs[size_t(task / int64_t(heads.size()))];
    const int h = heads[size_t(task % int64_t(heads.size()))];
    const int64_t state_at = (n * d.HV + h) * KV;
    Mat S = Mat::Zero(d.K, d.V);
    if (pool) {
      const int64_t slot = slot_at(idx->data, idx->spec.dtype, n);
      const int64_t at = (slot * d.HV + h) * KV;
      if (slot >= 0 && quant::is_8bit(s.state_dtype)) S = load_quantized_state(*pool, in.at("pool_scale"), at, d.K, d.V);
      else if (slot >= 0) S = load_state(*pool, at, s.layout, d.K, d.V);
    } else if (h0) {
      S = load_state(*h0, state_at, s.layout, d.K, d.V);
    }
    f(n, h, S, r);
    store_state(pool ? stored(S) : S, s.layout, r.ht.data() + state_at);
  });
  return r;
}

}  // namespace detail
}  // namespace gdn::ref

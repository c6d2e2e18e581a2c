#include "run/drift.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>

#include "core/half.h"
#include "core/op.h"
#include "core/parallel_for.h"
#include "core/state_quant.h"
#include "run/inputs.h"

namespace gdn {
namespace {

// The sampled shape: a prefill of one sequence of the longest length over opt.heads value heads
// (one q/k head each), with the point's K, V, inputs, gate and normalisation. Its tensors name
// the streams, so the drift sees what a prefill of that shape would.
Shape sampled_shape(const Shape& s, const DriftOptions& opt) {
  Shape d = s;
  d.op = OpKind::prefill;
  d.h_qk = d.h_v = opt.heads;
  d.seqlens = {opt.lengths.back()};
  d.pool = 0, d.has_h0 = false, d.state_dtype = DType::f32, d.layout = Layout::vk;
  return d;
}

const TensorSpec& spec_named(const std::vector<TensorSpec>& specs, const std::string& name) {
  for (auto& t : specs)
    if (t.name == name) return t;
  throw std::logic_error("drift: the sampled prefill shape has no tensor '" + name + "'");
}

// Sums of squares behind one rel L2 figure.
struct Sums {
  double diff2 = 0, ref2 = 0;
  void add(double x, double ref) { diff2 += (x - ref) * (x - ref), ref2 += ref * ref; }
  double rel() const { return ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2); }
};

// One value head: its q, k, v and gate token by token, its sampled rows run twice.
struct HeadRun {
  const Shape& d;
  const std::vector<TensorSpec>& specs;
  uint64_t seed;
  int h;
  DType format;

  // Elements [begin, begin + n) of a float input, widened to float.
  void window(const std::string& name, int64_t begin, int64_t n, float* out) const {
    const TensorSpec& spec = spec_named(specs, name);
    if (spec.dtype == DType::f32) return fill_input_window(d, spec, out, seed, begin, begin + n);
    uint16_t raw[1024];
    for (int64_t done = 0; done < n; done += 1024) {
      const int64_t m = std::min<int64_t>(1024, n - done);
      fill_input_window(d, spec, raw, seed, begin + done, begin + done + m);
      for (int64_t i = 0; i < m; ++i) out[done + i] = half_to_float(spec.dtype, raw[i]);
    }
  }
  float at(const std::string& name, int64_t i) const {
    float x;
    window(name, i, 1, &x);
    return x;
  }

  void run(const DriftOptions& opt, std::vector<Sums>& state, std::vector<Sums>& out) const {
    const int K = d.dk, V = d.dv, H = d.h_qk, R = opt.rows_per_head;
    const float scale = float(d.effective_scale());
    std::vector<int> rows(static_cast<size_t>(R));
    for (int r = 0; r < R; ++r) rows[size_t(r)] = int((2 * int64_t(r) + 1) * V / (2 * R));  // evenly spread
    const auto n = static_cast<size_t>(K), states = static_cast<size_t>(R) * n;
    std::vector<float> q(n), k(n), exact(states, 0.f), quant(states, 0.f);
    std::vector<uint8_t> codes(n);
    double a_log = 0, dt_bias = 0;
    if (d.gate == GateForm::raw) a_log = at("A_log", h), dt_bias = at("dt_bias", h);
    size_t mark = 0;
    for (int64_t t = 0; t < opt.lengths.back(); ++t) {
      window("q", (t * H + h) * K, K, q.data());
      window("k", (t * H + h) * K, K, k.data());
      if (d.l2norm) normalise(q), normalise(k);
      for (auto& x : q) x *= scale;
      const int64_t gi = t * d.h_v + h;
      double g, beta;
      if (d.gate == GateForm::log) {
        g = at("g", gi), beta = at("beta", gi);
      } else {
        const double x = double(at("a", gi)) + dt_bias;
        g = -std::exp(a_log) * (x > 20.0 ? x : std::log1p(std::exp(x)));
        beta = 1.0 / (1.0 + std::exp(-double(at("b", gi))));
      }
      const float decay = float(std::exp(g)), b = float(beta);
      const bool in_window = t >= opt.lengths[mark] - opt.o_window;
      for (int r = 0; r < R; ++r) {
        const float v = at("v", (t * d.h_v + h) * V + rows[size_t(r)]);
        const float o_exact = step(exact.data() + int64_t(r) * K, K, k.data(), q.data(), v, decay, b);
        float* s = quant.data() + int64_t(r) * K;
        const float o_quant = step(s, K, k.data(), q.data(), v, decay, b);
        if (opt.stochastic) {
          // One draw per (seed, head, row, token, element).
          const uint64_t row_key = (seed * 0x100000001b3ull + uint64_t(h)) * 0x10001ull + uint64_t(rows[size_t(r)]);
          auto u = [&](int64_t i) { return quant::uniform_draw((row_key * 0x100000000ull + uint64_t(t)) * uint64_t(K) + uint64_t(i)); };
          const float sc = quant::quantize_row_stochastic(format, s, K, codes.data(), u);
          quant::dequantize_row(format, codes.data(), sc, K, s);
        } else {
          quant::round_trip_row(format, s, K, codes.data());  // the store of a decode step
        }
        if (in_window) out[mark].add(o_quant, o_exact);
      }
      if (t + 1 == opt.lengths[mark]) {
        for (size_t i = 0; i < exact.size(); ++i) state[mark].add(quant[i], exact[i]);
        ++mark;
      }
    }
  }

  static void normalise(std::vector<float>& x) {
    float ss = 0;
    for (float e : x) ss += e * e;
    const float r = 1.f / std::sqrt(ss + kL2NormEpsF);
    for (auto& e : x) e *= r;
  }

  // One token of one vk row (docs/method.md 1), fp32: returns o_j.
  static float step(float* s, int K, const float* k, const float* q, float v, float decay, float beta) {
    float p = 0;
    for (int i = 0; i < K; ++i) p += s[i] * k[i];
    const float dlt = beta * (v - decay * p);
    float o = 0;
    for (int i = 0; i < K; ++i) {
      s[i] = decay * s[i] + dlt * k[i];
      o += s[i] * q[i];
    }
    return o;
  }
};

}  // namespace

StateDrift estimate_drift(const Shape& s, uint64_t seed, const DriftOptions& opt) {
  if (!quant::is_8bit(s.state_dtype))
    throw std::invalid_argument("drift is measured for 8-bit state pools, not " + std::string(to_string(s.state_dtype)));
  if (opt.heads < 1 || opt.rows_per_head < 1 || opt.rows_per_head > s.dv || opt.lengths.empty() || opt.o_window < 1 ||
      !std::is_sorted(opt.lengths.begin(), opt.lengths.end()) || opt.lengths.front() < opt.o_window)
    throw std::invalid_argument("drift options: heads, rows and lengths must be positive and sorted");
  const Shape d = sampled_shape(s, opt);
  const auto specs = op_def(OpKind::prefill).tensors(d);
  const size_t marks = opt.lengths.size();
  std::vector<std::vector<Sums>> state(size_t(opt.heads), std::vector<Sums>(marks)), out = state;
  parallel_for(opt.heads, worker_count(opt.heads, opt.threads), [&](int64_t h, int) {
    HeadRun{d, specs, seed, int(h), s.state_dtype}.run(opt, state[size_t(h)], out[size_t(h)]);
  });
  StateDrift r;
  r.heads = opt.heads, r.rows = opt.heads * opt.rows_per_head, r.tokens = opt.lengths;
  for (size_t m = 0; m < marks; ++m) {
    Sums st, o;
    for (int h = 0; h < opt.heads; ++h) {
      st.diff2 += state[size_t(h)][m].diff2, st.ref2 += state[size_t(h)][m].ref2;
      o.diff2 += out[size_t(h)][m].diff2, o.ref2 += out[size_t(h)][m].ref2;
    }
    r.state_rel_l2.push_back(st.rel());
    r.o_rel_l2.push_back(o.rel());
  }
  return r;
}

StateDrift cached_drift(const Shape& s, uint64_t seed) {
  static std::mutex lock;
  static std::map<std::string, StateDrift> done;
  const std::string key = std::string(to_string(s.state_dtype)) + " " + std::to_string(s.dk) + "x" +
                          std::to_string(s.dv) + " " + std::string(to_string(s.inputs)) + " " +
                          std::string(to_string(s.gate)) + " " + std::string(to_string(s.input_dtype)) +
                          (s.l2norm ? " l2" : " raw") + " scale=" + std::to_string(s.scale) + " seed=" +
                          std::to_string(seed);
  std::lock_guard<std::mutex> hold(lock);
  if (auto it = done.find(key); it != done.end()) return it->second;
  return done[key] = estimate_drift(s, seed);
}

}  // namespace gdn

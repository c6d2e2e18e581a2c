// Seeded input generator: determinism, sub-range regeneration, distributions, pool indices, poison.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "core/half.h"
#include "core/op.h"
#include "run/inputs.h"

namespace gdn {
namespace {

// Host bytes for a tensor, 8-byte aligned.
struct Buffer {
  std::vector<uint64_t> words;
  explicit Buffer(const TensorSpec& spec) : words((spec.bytes() + 7) / 8 + 1, 0) {}
  void* data() { return words.data(); }
  template <class T> T* as() { return reinterpret_cast<T*>(words.data()); }
};

TensorSpec spec_of(const Shape& s, const std::string& name) {
  for (auto& t : op_def(s.op).tensors(s))
    if (t.name == name) return t;
  throw std::runtime_error("no tensor " + name);
}

Shape prefill_shape(int64_t tokens, int h_v = 32, int dk = 128) {
  Shape s;
  s.op = OpKind::prefill;
  s.h_qk = std::min(16, h_v);
  s.h_v = h_v;
  s.dk = s.dv = dk;
  s.seqlens = {tokens};
  return s;
}

// Values of a float tensor as double.
std::vector<double> values(const TensorSpec& spec, Buffer& b) {
  std::vector<double> out(static_cast<size_t>(spec.numel()));
  for (int64_t i = 0; i < spec.numel(); ++i)
    out[size_t(i)] = spec.dtype == DType::f32 ? double(b.as<float>()[i]) : double(half_to_float(spec.dtype, b.as<uint16_t>()[i]));
  return out;
}

void mean_std(const std::vector<double>& x, double& mean, double& stdev) {
  double s = 0, ss = 0;
  for (double v : x) s += v;
  mean = s / double(x.size());
  for (double v : x) ss += (v - mean) * (v - mean);
  stdev = std::sqrt(ss / double(x.size()));
}

std::vector<double> fill(const Shape& s, const std::string& name, uint64_t seed, TensorSpec* spec_out = nullptr) {
  auto spec = spec_of(s, name);
  Buffer b(spec);
  fill_input(s, spec, b.data(), seed);
  if (spec_out) *spec_out = spec;
  return values(spec, b);
}

TEST(Inputs, SameSeedSameBitsDifferentSeedDiffers) {
  Shape s = prefill_shape(64);
  for (const char* name : {"q", "k", "v", "g", "beta", "h0"}) {
    auto spec = spec_of(s, name);
    Buffer a(spec), b(spec), c(spec);
    fill_input(s, spec, a.data(), 7);
    fill_input(s, spec, b.data(), 7);
    fill_input(s, spec, c.data(), 8);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), spec.bytes()), 0) << name;
    int64_t same = 0;
    for (int64_t i = 0; i < spec.numel(); ++i)
      same += spec.dtype == DType::f32 ? a.as<uint32_t>()[i] == c.as<uint32_t>()[i]
                                       : a.as<uint16_t>()[i] == c.as<uint16_t>()[i];
    // Only the exact zeros of the no-decay heads (and rare bf16 coincidences) may match.
    EXPECT_LT(same, spec.numel() / 3) << name;
  }
}

TEST(Inputs, NamesGiveIndependentStreams) {
  Shape s = prefill_shape(16);
  auto q = fill(s, "q", 3), k = fill(s, "k", 3);
  int same = 0;
  for (size_t i = 0; i < q.size(); ++i) same += q[i] == k[i];
  EXPECT_LT(same, int(q.size()) / 20);
}

TEST(Inputs, RangeEqualsSliceOfFullFill) {
  Shape s = prefill_shape(40, 8, 16);
  s.h_qk = 4;
  s.seqlens = {10, 7, 23};
  for (const char* name : {"q", "v", "g", "beta", "h0", "cu_seqlens"}) {
    auto spec = spec_of(s, name);
    Buffer full(spec), part(spec);
    fill_input(s, spec, full.data(), 11, 2);
    const int64_t n = spec.numel(), b = n / 3, e = std::max(b + 1, 2 * n / 3);
    fill_input_range(s, spec, part.data(), 11, b, e);
    const size_t es = dtype_size(spec.dtype);
    EXPECT_EQ(std::memcmp(static_cast<char*>(full.data()) + b * es, static_cast<char*>(part.data()) + b * es,
                          size_t(e - b) * es),
              0)
        << name;
  }
  Shape d;
  d.op = OpKind::mtp;
  d.batch = 37, d.tokens = 3, d.pool = 500, d.indices = IndexPattern::padded, d.gate = GateForm::raw;
  d.h_qk = 1, d.h_v = 2, d.dk = d.dv = 8;
  for (const char* name : {"indices", "pool", "a", "b", "A_log", "dt_bias"}) {
    auto spec = spec_of(d, name);
    Buffer full(spec), part(spec);
    fill_input(d, spec, full.data(), 5);
    const int64_t n = spec.numel(), b = n / 4, e = n - 1;
    fill_input_range(d, spec, part.data(), 5, b, e);
    const size_t es = dtype_size(spec.dtype);
    EXPECT_EQ(std::memcmp(static_cast<char*>(full.data()) + b * es, static_cast<char*>(part.data()) + b * es,
                          size_t(e - b) * es),
              0)
        << name;
  }
}

TEST(Inputs, ThreadCountDoesNotChangeValues) {
  Shape s = prefill_shape(512);  // q has 1M elements: several workers
  auto spec = spec_of(s, "q");
  Buffer one(spec), two(spec), three(spec);
  fill_input(s, spec, one.data(), 9, 1);
  fill_input(s, spec, two.data(), 9, 2);
  fill_input(s, spec, three.data(), 9, 3);
  EXPECT_EQ(std::memcmp(one.data(), two.data(), spec.bytes()), 0);
  EXPECT_EQ(std::memcmp(one.data(), three.data(), spec.bytes()), 0);
}

TEST(Inputs, RangeOutsideTensorThrows) {
  Shape s = prefill_shape(4);
  auto spec = spec_of(s, "q");
  Buffer b(spec);
  EXPECT_THROW(fill_input_range(s, spec, b.data(), 1, 0, spec.numel() + 1), std::out_of_range);
}

TEST(Inputs, NormalsHaveUnitMoments) {
  Shape s = prefill_shape(1024, 32, 128);  // v: 4M bf16 values; pool-like h0 is f32
  s.seqlens = {50};                        // q: 50*16*128 = 102400 samples
  for (const char* name : {"q", "v", "h0"}) {
    auto x = fill(s, name, 21);
    ASSERT_GE(x.size(), 100000u);
    double m, sd;
    mean_std(x, m, sd);
    EXPECT_NEAR(m, 0.0, 0.01) << name;
    EXPECT_NEAR(sd, 1.0, 0.01) << name;
  }
}

TEST(Inputs, StandardGateHasQuarterNoDecayHeads) {
  Shape s = prefill_shape(4000, 32);
  auto g = fill(s, "g", 4);
  double sum = 0;
  int64_t count = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    int h = int(i % 32);
    if (h >= 24) {
      ASSERT_EQ(g[i], 0.0) << "head " << h;
    } else {
      ASSERT_LT(g[i], 0.0) << "head " << h;
      sum += g[i], ++count;
    }
  }
  // E[logsigmoid(N(0,1))] = -0.806 -> about -0.0504 after / 16.
  EXPECT_NEAR(sum / double(count), -0.0504, 0.002);
  auto beta = fill(s, "beta", 4);
  double m, sd;
  mean_std(beta, m, sd);
  EXPECT_NEAR(m, 0.5, 0.01);
  for (double b : beta) ASSERT_TRUE(b > 0.0 && b < 1.0);
}

TEST(Inputs, StressDistributions) {
  Shape s = prefill_shape(2000, 8);
  s.inputs = InputDist::beta_one;
  for (double b : fill(s, "beta", 1)) ASSERT_EQ(b, 1.0);

  s.inputs = InputDist::positive_keys;
  auto k = fill(s, "k", 1);
  double m, sd;
  mean_std(k, m, sd);
  EXPECT_NEAR(m, 0.5, 0.01);
  for (double x : k) ASSERT_TRUE(x >= 0.0 && x < 1.0) << x;

  s.inputs = InputDist::no_decay;
  for (double g : fill(s, "g", 1)) ASSERT_EQ(g, 0.0);

  s.inputs = InputDist::strong_decay;
  auto g = fill(s, "g", 1);
  double most = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (i % 8 == 0) ASSERT_EQ(g[i], 0.0);
    else ASSERT_LE(g[i], 0.0);
    most = std::min(most, g[i]);
    ASSERT_TRUE(std::isfinite(g[i]));
  }
  EXPECT_LT(most, -5.0);  // some head decays strongly
}

// docs/method.md 3: q and k are L2-normalised by the kernel (l2norm on) or up front (off): without
// the kernel's norm every row of K values has a norm in [1/2, 1] (not all 1: the flag must still
// change the result) up to the one rounding, the draws keep their directions, any sub-range gives
// the full fill's bits, and the l2norm-on inputs are unchanged.
TEST(Inputs, QKRowsAreNormalisedWithoutTheKernelNorm) {
  Shape on = prefill_shape(300, 8, 64);
  on.h_qk = 4;
  Shape off = on;
  off.l2norm = false;
  for (auto dist : {InputDist::standard, InputDist::positive_keys}) {
    on.inputs = off.inputs = dist;
    for (const char* name : {"q", "k"}) {
      TensorSpec spec;
      const auto raw = fill(on, name, 3, &spec), unit = fill(off, name, 3);
      const int64_t K = spec.dims.back(), rows = spec.numel() / K;
      ASSERT_EQ(K, 64);
      double least = 2, most = 0;
      for (int64_t r = 0; r < rows; ++r) {
        double ss = 0, raw_ss = 0, dot = 0;
        for (int64_t j = r * K; j < (r + 1) * K; ++j) {
          ss += unit[size_t(j)] * unit[size_t(j)], raw_ss += raw[size_t(j)] * raw[size_t(j)];
          dot += unit[size_t(j)] * raw[size_t(j)];
        }
        ASSERT_GE(std::sqrt(ss), 0.5 - 4e-3) << name << " row " << r;  // bf16: 2^-9 a value
        ASSERT_LE(std::sqrt(ss), 1.0 + 4e-3) << name << " row " << r;
        ASSERT_NEAR(dot / std::sqrt(ss * raw_ss), 1.0, 1e-4) << name << " row " << r;  // same direction
        least = std::min(least, std::sqrt(ss)), most = std::max(most, std::sqrt(ss));
      }
      EXPECT_LT(least, 0.6) << name;  // the norms spread over [1/2, 1]
      EXPECT_GT(most, 0.9) << name;
      auto spec_off = spec_of(off, name);
      Buffer full(spec_off), part(spec_off);
      fill_input(off, spec_off, full.data(), 3, 2);
      const int64_t b = 5 * K + 17, e = 9 * K + 3;  // starts and ends inside rows
      fill_input_range(off, spec_off, part.data(), 3, b, e);
      EXPECT_EQ(std::memcmp(full.as<uint16_t>() + b, part.as<uint16_t>() + b, size_t(e - b) * 2), 0) << name;
    }
  }
  EXPECT_EQ(fill(on, "v", 3), fill(off, "v", 3));  // only q and k change
}

TEST(Inputs, RawGateDistributions) {
  Shape s;
  s.op = OpKind::decode;
  s.batch = 4096, s.h_qk = 2, s.h_v = 8, s.gate = GateForm::raw;
  auto a_log = fill(s, "A_log", 2);
  for (int h = 0; h < 8; ++h) {
    if (h >= 6) EXPECT_EQ(a_log[size_t(h)], -INFINITY) << h;
    else EXPECT_TRUE(a_log[size_t(h)] >= std::log(1.0 / 16.0) - 1e-6 && a_log[size_t(h)] <= 0.0) << h;
  }
  double m, sd;
  auto a = fill(s, "a", 2);
  mean_std(a, m, sd);
  EXPECT_NEAR(m, 0.0, 0.03);
  EXPECT_NEAR(sd, 1.0, 0.03);
  auto b = fill(s, "b", 2);
  mean_std(b, m, sd);
  EXPECT_NEAR(sd, 1.0, 0.03);
  s.batch = 1, s.h_v = 4096, s.h_qk = 1;  // dt_bias is per head: many heads for the moments
  auto dt = fill(s, "dt_bias", 2);
  mean_std(dt, m, sd);
  EXPECT_NEAR(m, -2.0, 0.03);
  EXPECT_NEAR(sd, 0.5, 0.03);

  s.h_v = 8, s.h_qk = 2;
  s.inputs = InputDist::no_decay;
  for (double x : fill(s, "A_log", 2)) EXPECT_EQ(x, -INFINITY);
  s.inputs = InputDist::strong_decay;
  auto strong = fill(s, "A_log", 2);
  EXPECT_EQ(strong[0], -INFINITY);
  for (int h = 1; h < 8; ++h) EXPECT_LE(strong[size_t(h)], std::log(16.0) + 1e-6);
  s.inputs = InputDist::beta_one;
  for (double x : fill(s, "b", 2)) {
    ASSERT_EQ(x, 100.0);
    ASSERT_EQ(1.0f / (1.0f + std::exp(-float(x))), 1.0f);
  }
}

TEST(Inputs, StrongDecayRatesAgreeBetweenGateForms) {
  // g = -A_h softplus(0.5 x + 1) and A_log = log(A_h): g / softplus(...) recovers exp(A_log).
  Shape s = prefill_shape(1, 8);
  s.inputs = InputDist::strong_decay;
  auto g = fill(s, "g", 6);
  Shape r = s;
  r.gate = GateForm::raw;
  auto a_log = fill(r, "A_log", 6);
  for (int h = 1; h < 8; ++h) EXPECT_LT(g[size_t(h)], 0.0);
  EXPECT_EQ(g[0], 0.0);
  EXPECT_EQ(a_log[0], -INFINITY);
  // softplus(0.5 x + 1) lies in (0, ~4) for any plausible x: |g| <= 4 A_h.
  for (int h = 1; h < 8; ++h) EXPECT_LE(-g[size_t(h)], 4.5 * std::exp(a_log[size_t(h)]) + 1e-6);
}

TEST(Inputs, BF16StateIsRoundedF32State) {
  Shape s;
  s.op = OpKind::decode;
  s.batch = 3, s.h_qk = 1, s.h_v = 2, s.dk = s.dv = 8;
  auto f32 = spec_of(s, "pool");
  s.state_dtype = DType::bf16;
  auto bf = spec_of(s, "pool");
  Buffer a(f32), b(bf);
  fill_input(s, f32, a.data(), 12);
  fill_input(s, bf, b.data(), 12);
  for (int64_t i = 0; i < f32.numel(); ++i) ASSERT_EQ(b.as<uint16_t>()[i], float_to_bf16(a.as<float>()[i]));
}

TEST(Inputs, CuSeqlensArePrefixSums) {
  Shape s = prefill_shape(1);
  s.seqlens = {5, 1, 300, 2};
  auto spec = spec_of(s, "cu_seqlens");
  Buffer b(spec);
  fill_input(s, spec, b.data(), 0);
  std::vector<int32_t> cu(b.as<int32_t>(), b.as<int32_t>() + 5);
  EXPECT_EQ(cu, (std::vector<int32_t>{0, 5, 6, 306, 308}));
}

Shape step_shape(int64_t B, int64_t P, IndexPattern p) {
  Shape s;
  s.op = OpKind::decode;
  s.batch = B, s.pool = P, s.indices = p;
  return s;
}

TEST(Indices, Identity) {
  auto idx = make_indices(step_shape(5, 9, IndexPattern::identity), 3);
  EXPECT_EQ(idx, (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(Indices, RandomDistinctInRangeAndSeeded) {
  auto s = step_shape(100000, 1000000, IndexPattern::random);
  auto idx = make_indices(s, 3);
  std::set<int64_t> seen(idx.begin(), idx.end());
  EXPECT_EQ(seen.size(), idx.size());
  EXPECT_GE(*seen.begin(), 0);
  EXPECT_LT(*seen.rbegin(), 1000000);
  EXPECT_GT(*seen.rbegin(), 900000);  // spread over the pool, not packed at the start
  EXPECT_EQ(idx, make_indices(s, 3));
  EXPECT_NE(idx, make_indices(s, 4));
  // P == B: a permutation.
  auto perm = make_indices(step_shape(64, 64, IndexPattern::random), 1);
  std::sort(perm.begin(), perm.end());
  for (int64_t i = 0; i < 64; ++i) EXPECT_EQ(perm[size_t(i)], i);
}

TEST(Indices, PaddedEveryEighthRow) {
  auto idx = make_indices(step_shape(40, 100, IndexPattern::padded), 8);
  std::set<int64_t> seen;
  for (size_t i = 0; i < idx.size(); ++i) {
    if (i % 8 == 7) {
      EXPECT_EQ(idx[i], -1) << i;
    } else {
      EXPECT_TRUE(idx[i] >= 0 && idx[i] < 100) << i;
      seen.insert(idx[i]);
    }
  }
  EXPECT_EQ(seen.size(), 35u);
}

TEST(Indices, HighAtTheTopShuffled) {
  const int64_t P = 5000000, B = 256;
  auto idx = make_indices(step_shape(B, P, IndexPattern::high), 2);
  auto sorted = idx;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < B; ++i) EXPECT_EQ(sorted[size_t(i)], P - B + i);
  EXPECT_NE(idx, sorted);
  std::reverse(sorted.begin(), sorted.end());
  EXPECT_NE(idx, sorted);
}

TEST(Indices, TensorHoldsMakeIndicesInItsDtype) {
  auto s = step_shape(50, 70, IndexPattern::padded);
  auto want = make_indices(s, 13);
  for (DType d : {DType::i64, DType::i32}) {
    s.index_dtype = d;
    auto spec = spec_of(s, "indices");
    Buffer b(spec);
    fill_input(s, spec, b.data(), 13);
    for (int64_t i = 0; i < 50; ++i) {
      int64_t got = d == DType::i32 ? int64_t(b.as<int32_t>()[i]) : b.as<int64_t>()[i];
      ASSERT_EQ(got, want[size_t(i)]);
    }
  }
}

TEST(Poison, RoundTrip) {
  for (DType d : {DType::f32, DType::bf16, DType::f16}) {
    TensorSpec spec{"o", d, {3, 5}, Role::output};
    Buffer b(spec);
    poison(spec, b.data());
    for (int64_t i = 0; i < 15; ++i) ASSERT_TRUE(is_poison(spec, b.data(), i));
    if (d == DType::f32) {
      EXPECT_TRUE(std::isnan(b.as<float>()[0]));
      b.as<float>()[4] = 1.0f;
      b.as<float>()[5] = std::nanf("");  // a different NaN is not the poison
    } else {
      EXPECT_TRUE(std::isnan(half_to_float(d, b.as<uint16_t>()[0])));
      b.as<uint16_t>()[4] = float_to_half(d, 1.0f);
      b.as<uint16_t>()[5] = float_to_half(d, std::nanf(""));
    }
    EXPECT_FALSE(is_poison(spec, b.data(), 4));
    EXPECT_FALSE(is_poison(spec, b.data(), 5));
    EXPECT_TRUE(is_poison(spec, b.data(), 6));
  }
  TensorSpec ints{"indices", DType::i32, {4}, Role::input};
  Buffer b(ints);
  for (int i = 0; i < 4; ++i) b.as<int32_t>()[i] = i;
  poison(ints, b.data());
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(b.as<int32_t>()[i], i);
    EXPECT_FALSE(is_poison(ints, b.data(), i));
  }
}

}  // namespace
}  // namespace gdn

// 8-bit state pools (docs/method.md 2.5, docs/state-8bit.md): the host quantizer against a brute
// force, the contract's tensors, byte model and shape rules, decode/cpu and mtp/cpu verified
// against the quantized reference (padding rows, high slots, rollback, read-only pools), a
// wrong rounding caught, and the drift estimate.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/op.h"
#include "core/registry.h"
#include "core/slot.h"
#include "core/state_format.h"
#include "core/state_quant.h"
#include "report/report.h"
#include "run/backend.h"
#include "run/drift.h"
#include "run/problem.h"
#include "run/verify.h"
#include "step/plan.h"
#include "step/step.h"
#include "test_support.h"

namespace gdn {
namespace {

// The fp8 e4m3 code nearest to y by search over every finite code (ties to the even code),
// saturated to +-448: the specification the fast encoder must meet.
uint8_t nearest_fp8(float y) {
  const float a = std::fabs(y);
  int best = 0;
  for (int c = 1; c <= 0x7e; ++c) {
    const float dc = std::fabs(quant::fp8e4m3_to_float(uint8_t(c)) - a);
    const float db = std::fabs(quant::fp8e4m3_to_float(uint8_t(best)) - a);
    if (dc < db || (dc == db && (c & 1) == 0)) best = c;
  }
  return uint8_t((std::signbit(y) ? 0x80 : 0) | best);
}

TEST(StateQuant, Fp8DecodesTheE4m3fnTable) {
  EXPECT_EQ(quant::fp8e4m3_to_float(0x00), 0.f);
  EXPECT_EQ(quant::fp8e4m3_to_float(0x01), std::ldexp(1.f, -9));  // smallest subnormal
  EXPECT_EQ(quant::fp8e4m3_to_float(0x08), std::ldexp(1.f, -6));  // smallest normal
  EXPECT_EQ(quant::fp8e4m3_to_float(0x38), 1.f);
  EXPECT_EQ(quant::fp8e4m3_to_float(0x7e), 448.f);
  EXPECT_EQ(quant::fp8e4m3_to_float(0xfe), -448.f);
  EXPECT_TRUE(std::isnan(quant::fp8e4m3_to_float(0x7f)));
  EXPECT_TRUE(std::isnan(quant::fp8e4m3_to_float(0xff)));
  for (int c = 0; c < 0x7e; ++c)  // increasing: what the encoder's rounding relies on
    EXPECT_LT(quant::fp8e4m3_to_float(uint8_t(c)), quant::fp8e4m3_to_float(uint8_t(c + 1))) << c;
}

TEST(StateQuant, Fp8EncoderRoundsToNearestEvenAndSaturates) {
  // Every code, the midpoints between neighbours (ties) and a float step either side of them.
  std::vector<float> probes;
  for (int c = 0; c <= 0x7e; ++c) {
    const float x = quant::fp8e4m3_to_float(uint8_t(c));
    probes.push_back(x);
    if (c < 0x7e) {
      const float mid = (x + quant::fp8e4m3_to_float(uint8_t(c + 1))) / 2;
      for (float m : {mid, std::nextafter(mid, 0.f), std::nextafter(mid, 1e9f)}) probes.push_back(m);
    }
  }
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> exponent(-12.f, 10.f);
  for (int i = 0; i < 20000; ++i) probes.push_back(std::exp2(exponent(gen)));
  for (float p : {448.f, 449.f, 464.f, 500.f, 1e30f, std::numeric_limits<float>::infinity()}) probes.push_back(p);
  for (float p : probes)
    for (float y : {p, -p}) ASSERT_EQ(quant::float_to_fp8e4m3(y), nearest_fp8(y)) << "y = " << y;
  EXPECT_EQ(quant::float_to_fp8e4m3(std::numeric_limits<float>::quiet_NaN()), 0x7f);
}

TEST(StateQuant, RowsMapTheirAbsmaxToFullScaleAndRoundTripWithinHalfAStep) {
  std::mt19937 gen(11);
  std::normal_distribution<float> normal(0.f, 3.f);
  for (DType d : {DType::fp8e4m3, DType::i8}) {
    std::vector<float> x(128), back(128);
    std::vector<uint8_t> codes(128);
    for (auto& e : x) e = normal(gen);
    x[17] = -20.f;  // the row's absmax
    const float s = quant::quantize_row(d, x.data(), 128, codes.data());
    // int8: 20 / 127, the absmax at code -127; fp8: 20 = 1.25 x 2^4 -> 2^-4, the absmax at -320.
    EXPECT_FLOAT_EQ(s, d == DType::i8 ? 20.f / 127.f : 0.0625f);
    EXPECT_EQ(quant::decode(d, codes[17]), d == DType::i8 ? -127.f : -320.f);
    quant::dequantize_row(d, codes.data(), s, 128, back.data());
    for (int i = 0; i < 128; ++i) {
      // int8: half a step of the scale; fp8: half an ulp of 3 mantissa bits (or a subnormal step).
      const float bound = d == DType::i8 ? 0.5f * s * 1.0001f
                                         : std::max(std::fabs(x[i]) / 16.f, std::ldexp(1.f, -10) * s) * 1.0001f;
      EXPECT_LE(std::fabs(back[i] - x[i]), bound) << to_string(d) << " element " << i;
      if (d == DType::i8) EXPECT_NE(codes[i], 0x80);  // -128 never occurs
    }
    std::vector<float> zeros(16, 0.f);
    std::vector<uint8_t> zc(16, 0xaa);
    EXPECT_EQ(quant::quantize_row(d, zeros.data(), 16, zc.data()), 0.f);
    for (auto c : zc) EXPECT_EQ(c, 0);
  }
}

// Stochastic rounding (the drift estimate's alternative store): every code is one of the two
// grid neighbours of y, a grid value maps to itself, the mean over many draws is y (unbiased), and
// it saturates like the nearest encoder.
// fp8's row scale is the least power of two that holds the absmax under 448, read from its bits:
// against the definition by search, at the edges of the mantissa rule and of the exponent clamp.
TEST(StateQuant, Fp8RowScaleIsTheLeastPowerOfTwoThatHoldsTheRow) {
  auto by_search = [](float a) {
    int e = -119;
    while (std::ldexp(double(a), -e) > 448.0) ++e;
    return e;
  };
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> mantissa(1.f, 2.f);
  std::uniform_int_distribution<int> exponent(-120, 127);
  std::vector<float> cases{448.f, std::nextafter(448.f, 1e9f), std::nextafter(448.f, 0.f), 224.f, 1.f, 1.75f,
                           std::nextafter(1.75f, 2.f), 1e-30f, 1e-38f, 1e-44f, std::numeric_limits<float>::max()};
  for (int i = 0; i < 20000; ++i) cases.push_back(std::ldexp(mantissa(gen), exponent(gen)));
  for (float a : cases) {
    const quant::RowScale rs = quant::fp8_row_scale(a);
    const int e = by_search(a);
    ASSERT_EQ(rs.scale, std::ldexp(1.f, e)) << "absmax " << a;
    ASSERT_EQ(rs.inv, std::ldexp(1.f, -e)) << "absmax " << a;
    if (e > -119) ASSERT_GT(double(a) * rs.inv, 224.0) << "the largest code in (224, 448]: " << a;
  }
  EXPECT_EQ(quant::fp8_row_scale(0.f).inv, 0.f);
  EXPECT_EQ(quant::fp8_row_scale(0.f).scale, 0.f);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(quant::fp8_row_scale(inf).scale, inf);
  EXPECT_EQ(quant::fp8_row_scale(inf).inv, 0.f);
  EXPECT_EQ(quant::fp8_row_scale(std::nanf("")).inv, 0.f);
}

// Why the scale is a power of two: a stored fp8 row read back and stored again keeps its values
// (x 2^-e is exact, so every value is already on the grid; where the largest rounded down to code
// 224 the codes double and the scale halves), and so does one scaled by a power of two. A scale of
// absmax / 448 moves the grid when the absmax moves by a rounding, and every value is rounded again.
TEST(StateQuant, AnFp8RowStoredTwiceKeepsItsValues) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_int_distribution<int> magnitude(-40, 40);
  auto round_trip = [](std::vector<float> x) {
    std::vector<uint8_t> codes(x.size());
    quant::round_trip_row(DType::fp8e4m3, x.data(), int64_t(x.size()), codes.data());
    return x;
  };
  for (int row = 0; row < 2000; ++row) {
    std::vector<float> x(128);
    const float m = std::ldexp(1.f, magnitude(gen));
    for (auto& e : x) e = normal(gen) * m;
    const auto once = round_trip(x);
    ASSERT_EQ(round_trip(once), once) << "row " << row;
    auto halved = once;
    for (auto& e : halved) e *= 0.5f;  // a decay of 2^-1 on a row the update leaves alone
    ASSERT_EQ(round_trip(halved), halved) << "row " << row;
  }
}

TEST(StateQuant, StochasticRoundingPicksANeighbourAndIsUnbiased) {
  for (DType d : {DType::fp8e4m3, DType::i8}) {
    for (float y : {0.3f, -0.3f, 1.7f, 5.0f, -12.25f, 100.4f, 0.0007f, 0.0123f, 200.f, 447.f, -126.5f, 3.f}) {
      const float q = quant::qmax(d);
      if (std::fabs(y) > q) continue;
      const float lo = d == DType::i8 ? std::floor(y) : [&] {  // the grid point at or below y
        float best = -q;
        for (int c = 0; c < 256; ++c) {
          const float v = quant::decode(d, uint8_t(c));
          if (std::isfinite(v) && v <= y && v > best) best = v;
        }
        return best;
      }();
      double sum = 0;
      const int n = 20000;
      for (int i = 0; i < n; ++i) {
        const float v = quant::decode(d, quant::encode_stochastic(d, y, quant::uniform_draw(uint64_t(i) * 977 + 5)));
        if (v != lo) {
          ASSERT_GT(v, lo) << to_string(d) << " y = " << y;
          const float next = quant::decode(d, quant::encode_stochastic(d, v, 0.999f));
          ASSERT_EQ(next, v) << "a grid value maps to itself";
          for (int c = 0; c < 256; ++c) {  // nothing on the grid strictly between lo and v
            const float g = quant::decode(d, uint8_t(c));
            ASSERT_FALSE(g > lo && g < v) << to_string(d) << " y = " << y << " skipped " << g;
          }
        }
        sum += v;
      }
      const float hi_step = d == DType::i8 ? 1.f : std::max(std::fabs(y) / 8.f, std::ldexp(1.f, -9));
      EXPECT_NEAR(sum / n, y, 4 * hi_step / std::sqrt(double(n))) << to_string(d) << " y = " << y << ": unbiased";
    }
    EXPECT_EQ(quant::decode(d, quant::encode_stochastic(d, 1e6f, 0.5f)), quant::qmax(d));
    EXPECT_EQ(quant::decode(d, quant::encode_stochastic(d, -1e6f, 0.5f)), -quant::qmax(d));
  }
  float u_sum = 0;  // the draws are uniform in [0, 1)
  for (int i = 0; i < 10000; ++i) {
    const float u = quant::uniform_draw(uint64_t(i));
    ASSERT_TRUE(u >= 0.f && u < 1.f);
    u_sum += u;
  }
  EXPECT_NEAR(u_sum / 10000, 0.5, 0.02);
}

Shape step_shape(OpKind op, DType state, int64_t batch, int K = 64, int V = 32, int hv = 2) {
  Shape s;
  s.op = op;
  s.h_qk = 1, s.h_v = hv, s.dk = K, s.dv = V;
  s.batch = batch;
  s.tokens = op == OpKind::mtp ? 3 : 1;
  s.layout = Layout::vk;
  s.state_dtype = state;
  return s;
}

TEST(StateQuant, ContractAddsRowScalesAndCountsTheirBytes) {
  for (DType d : {DType::fp8e4m3, DType::i8}) {
    auto s = step_shape(OpKind::mtp, d, 4, 128, 128, 8);
    s.cache_intermediate = true;
    ASSERT_EQ(op_def(s.op).validate(s), "");
    std::map<std::string, TensorSpec> by_name;
    for (auto& t : op_def(s.op).tensors(s)) by_name[t.name] = t;
    ASSERT_TRUE(by_name.count("pool_scale") && by_name.count("intermediate_scale"));
    EXPECT_EQ(by_name["pool"].bytes(), uint64_t(4) * 8 * 128 * 128);
    EXPECT_EQ(by_name["pool_scale"].dims, (std::vector<int64_t>{4, 8, 128}));
    EXPECT_EQ(by_name["intermediate_scale"].dims, (std::vector<int64_t>{4, 3, 8, 128}));
    // Byte model: the f32 pool's state bytes / 4, plus 4 bytes per row of K for every state moved.
    auto f = s;
    f.state_dtype = DType::f32;
    const double slots = 4 + 4 + 4 * 3;  // read, written, cached
    const double f32_state = slots * 8 * 128 * 128 * 4.0, q8_state = slots * (8 * 128 * 128 + 4.0 * 8 * 128);
    EXPECT_DOUBLE_EQ(op_def(s.op).work(s).bytes - q8_state, op_def(f.op).work(f).bytes - f32_state);
  }
}

TEST(StateQuant, ShapeRulesRefuseWhatTheFormatCannotHold) {
  auto s = step_shape(OpKind::decode, DType::fp8e4m3, 4);
  s.layout = Layout::kv;
  EXPECT_NE(op_def(s.op).validate(s).find("layout vk"), std::string::npos) << op_def(s.op).validate(s);
  Shape p;  // prefill's dense form has no pool
  p.op = OpKind::prefill, p.seqlens = {64}, p.layout = Layout::vk, p.state_dtype = DType::i8;
  EXPECT_NE(op_def(p.op).validate(p).find("pool form"), std::string::npos) << op_def(p.op).validate(p);
  p.pool = 4;  // the pool form takes it (prefill/cpu and prefill/sm90 run it: test_prefill_8bit.cpp); the other GPU variants say why not
  EXPECT_EQ(op_def(p.op).validate(p), "");
  for (const char* name : {"prefill/cuda_recurrent", "prefill/sm75_legacy"})
    if (const Variant* v = Registry::instance().find(name)) EXPECT_NE(v->supports(p), "") << name;
  auto f16 = step_shape(OpKind::decode, DType::f16, 4);
  EXPECT_NE(op_def(f16.op).validate(f16).find("fp8e4m3 or int8"), std::string::npos);
  EXPECT_EQ(parse_dtype("int8"), DType::i8);
  EXPECT_EQ(parse_dtype("fp8e4m3"), DType::fp8e4m3);
  EXPECT_EQ(to_string(DType::i8), "int8");
}

// Runs one variant on the host and verifies it against the quantized reference.
Verification verify_on_host(const std::string& variant, const Shape& s, uint64_t seed = 5) {
  const Variant* v = Registry::instance().find(variant);
  if (v == nullptr) throw std::logic_error(variant + " is not registered");
  if (auto why = op_def(s.op).validate(s); !why.empty()) throw std::invalid_argument(why);
  if (auto why = v->supports(s); !why.empty()) throw std::invalid_argument(variant + ": " + why);
  auto backend = make_cpu_backend(2);
  Problem p(s, *backend, seed, 2);
  return verify_problem(*v, p, *backend, std::nullopt, 4e10, 2);
}

void expect_pass(const Verification& v, const std::string& what) {
  EXPECT_TRUE(v.pass) << what;
  for (auto& c : v.checks)
    EXPECT_TRUE(c.pass) << what << ": " << c.tensor << " rel_l2 " << c.rel_l2 << " (tol " << c.tolerance << ") unwritten "
                        << c.unwritten << " nonfinite " << c.nonfinite << " untouched " << c.untouched_diff;
}

TEST(StateQuant, DecodeCpuMatchesTheQuantizedReference) {
  for (DType d : {DType::fp8e4m3, DType::i8})
    for (auto pattern : {IndexPattern::identity, IndexPattern::padded, IndexPattern::high}) {
      auto s = step_shape(OpKind::decode, d, 17, 128, 64, 4);
      s.pool = 40;  // untouched slots, codes and scales, must stay bit-identical
      s.indices = pattern;
      s.index_dtype = pattern == IndexPattern::high ? DType::i32 : DType::i64;
      expect_pass(verify_on_host("decode/cpu", s), std::string(to_string(d)) + " " + std::string(to_string(pattern)));
    }
}

TEST(StateQuant, MtpCpuMatchesTheQuantizedReferenceWithCacheRollbackAndReadOnlyPools) {
  for (DType d : {DType::fp8e4m3, DType::i8})
    for (bool rollback : {false, true})
      for (bool update : {true, false}) {
        auto s = step_shape(OpKind::mtp, d, 9, 64, 32, 2);  // row 7 is padding
        s.tokens = 4, s.pool = 20, s.indices = IndexPattern::padded;
        s.cache_intermediate = true, s.rollback = rollback, s.update_state = update;
        s.gate = rollback ? GateForm::raw : GateForm::log;
        expect_pass(verify_on_host("mtp/cpu", s),
                    std::string(to_string(d)) + (rollback ? " rollback" : "") + (update ? "" : " read-only"));
      }
}

// A variant that stores fp8 rows with scale absmax / 448 (the rule fp8 pools had before the power of
// two) rounds every value on another grid: the pool's values miss the quantized reference, and the
// scale rule's check names the cause.
TEST(StateQuant, AnFp8ScaleOffTheRuleFailsVerification) {
  for (OpKind op : {OpKind::decode, OpKind::mtp}) {
    Shape s = step_shape(op, DType::fp8e4m3, 4);
    s.indices = IndexPattern::padded;
    auto backend = make_cpu_backend(2);
    Problem p(s, *backend, 5, 2);
    const Variant& v = *Registry::instance().find(op == OpKind::decode ? "decode/cpu" : "mtp/cpu");
    p.reset_device();
    v.launch(s, p.device(), backend->launch_context());
    p.download();
    const auto good = check_outputs(p, effective_tolerances(s, v.tolerances), {}, 2);
    expect_pass(good, std::string(to_string(op)));
    ASSERT_TRUE(good.pass);
    bool ruled = false;
    for (const auto& c : good.checks) ruled = ruled || (c.tensor == "pool_scale" && c.checked > 0);
    EXPECT_TRUE(ruled) << "the rule was checked";
    // Requantize every row of the written slots with scale absmax / 448.
    auto* codes = p.results().at("pool").as<uint8_t>();
    float* scales = p.results().at("pool_scale").as<float>();
    const Tensor& idx = p.inputs().at("indices");
    std::vector<int64_t> rows;
    for (int64_t b = 0; b < s.batch; ++b)
      if (const int64_t slot = slot_at(idx.data, idx.spec.dtype, b); slot >= 0)
        for (int64_t r = 0; r < int64_t(s.h_v) * s.dv; ++r) rows.push_back(slot * s.h_v * s.dv + r);
    ASSERT_FALSE(rows.empty());
    std::vector<float> x(size_t(s.dk));
    for (int64_t r : rows) {
      quant::dequantize_row(DType::fp8e4m3, codes + r * s.dk, scales[r], s.dk, x.data());
      float a = 0.f;
      for (float e : x) a = std::max(a, std::fabs(e));
      if (a == 0.f) continue;
      for (int64_t k = 0; k < s.dk; ++k) codes[r * s.dk + k] = quant::encode(DType::fp8e4m3, x[size_t(k)] * (448.f / a));
      scales[r] = a / 448.f;
    }
    const auto bad = check_outputs(p, effective_tolerances(s, v.tolerances), {}, 2);
    EXPECT_FALSE(bad.pass) << to_string(op);
    CaseRecord rec;  // the table's failure line counts rows, not a relative error
    rec.case_name = "q8", rec.variant = v.name, rec.mode = "cold", rec.status = CaseStatus::verify_failed;
    rec.shape = s, rec.verify = bad;
    const std::string table = format_tables({rec}, true, 1000);
    EXPECT_NE(table.find("written fp8 rows off the scale rule"), std::string::npos) << table;
    for (const auto& c : bad.checks)
      if (c.tensor == "pool_scale" || c.tensor == "pool") EXPECT_FALSE(c.pass) << to_string(op) << " " << c.tensor;
      else EXPECT_TRUE(c.pass) << to_string(op) << " " << c.tensor;
  }
}

TEST(StateQuant, StressInputsPass) {
  for (DType d : {DType::fp8e4m3, DType::i8})
    for (auto dist : {InputDist::strong_decay, InputDist::no_decay, InputDist::beta_one, InputDist::positive_keys}) {
      auto s = step_shape(OpKind::mtp, d, 6, 128, 32, 4);
      s.tokens = 8, s.inputs = dist, s.cache_intermediate = true;
      expect_pass(verify_on_host("mtp/cpu", s), std::string(to_string(d)) + " " + std::string(to_string(dist)));
    }
}

TEST(StateQuant, TruncatingStoreIsCaught) {
  for (DType d : {DType::fp8e4m3, DType::i8}) {
    auto s = step_shape(OpKind::decode, d, 16, 128, 64, 4);
    const auto v = verify_on_host("decode/cpu_q8_truncating", s);
    EXPECT_FALSE(v.pass) << to_string(d);
    for (auto& c : v.checks)
      if (c.tensor == "pool") {
        EXPECT_FALSE(c.pass) << to_string(d);
        EXPECT_GT(c.rel_l2, 1.5 * c.tolerance) << to_string(d) << ": the bug must stand clear of the threshold";
      }
  }
}

TEST(StateDriftEstimate, FiniteGrowingAndInt8BelowFp8) {
  DriftOptions opt;
  opt.heads = 4, opt.rows_per_head = 4, opt.lengths = {512, 4096, 16384}, opt.o_window = 256;
  StateDrift drift[2];
  int i = 0;
  for (DType d : {DType::fp8e4m3, DType::i8}) {
    auto s = step_shape(OpKind::decode, d, 1, 128, 128, 4);
    auto& r = drift[i++];
    r = estimate_drift(s, 3, opt);
    ASSERT_EQ(r.tokens, opt.lengths);
    EXPECT_EQ(r.rows, 16);
    for (size_t m = 0; m < r.tokens.size(); ++m) {
      EXPECT_TRUE(std::isfinite(r.state_rel_l2[m]) && r.state_rel_l2[m] > 0) << to_string(d) << " " << m;
      EXPECT_TRUE(std::isfinite(r.o_rel_l2[m]) && r.o_rel_l2[m] > 0) << to_string(d) << " " << m;
      EXPECT_LT(r.state_rel_l2[m], 1.0) << to_string(d);
    }
    EXPECT_GT(r.state_rel_l2.back(), r.state_rel_l2.front()) << to_string(d) << ": drift grows with length";
    EXPECT_EQ(estimate_drift(s, 3, opt).state_rel_l2, r.state_rel_l2) << "deterministic";
  }
  // 7 bits of a row's absmax (int8) against 3 mantissa bits (fp8 e4m3) on Gaussian-like rows.
  for (size_t m = 0; m < opt.lengths.size(); ++m) EXPECT_LT(drift[1].state_rel_l2[m], drift[0].state_rel_l2[m]);
  EXPECT_THROW(estimate_drift(step_shape(OpKind::decode, DType::bf16, 1), 3, opt), std::invalid_argument);
}

// Why the pools round to nearest (docs/state-8bit.md, Rounding): with fp8's power-of-two scale the
// error is stationary noise on every distribution, keys of one sign included (where an fp8 pool
// with a scale of absmax / 448 diverged), and stochastic rounding's error is larger everywhere (a
// uniform dither of a whole step against half a step, and with a power-of-two scale a value the
// update leaves alone is dithered again at every store). Prints the figures the doc quotes.
TEST(StateDriftEstimate, NearestRoundingStaysBoundedOnKeysOfOneSignAndBeatsStochastic) {
  DriftOptions opt;
  opt.heads = 4, opt.rows_per_head = 2, opt.o_window = 256;
  auto drift = [&](DType d, InputDist in, bool stochastic, std::vector<int64_t> lengths) {
    auto s = step_shape(OpKind::decode, d, 1, 128, 128, 4);
    s.inputs = in;
    opt.stochastic = stochastic, opt.lengths = lengths;
    const StateDrift r = estimate_drift(s, 3, opt);
    std::printf("  %-13s %-7s %-10s", std::string(to_string(in)).c_str(), std::string(to_string(d)).c_str(), stochastic ? "stochastic" : "nearest");
    for (size_t m = 0; m < lengths.size(); ++m)
      std::printf("  %6lld tokens: state %.3f o %.3f", static_cast<long long>(lengths[m]), r.state_rel_l2[m], r.o_rel_l2[m]);
    std::printf("\n");
    return r;
  };
  for (DType d : {DType::fp8e4m3, DType::i8}) {
    const auto rn = drift(d, InputDist::positive_keys, false, {4096, 32768});
    EXPECT_LT(rn.state_rel_l2[1], 0.6) << to_string(d) << ": bounded";
    EXPECT_LT(rn.state_rel_l2[1], 1.3 * rn.state_rel_l2[0]) << to_string(d) << ": stationary, not growing with length";
    const auto sr = drift(d, InputDist::positive_keys, true, {4096, 32768});
    EXPECT_GT(sr.state_rel_l2[1], 1.2 * rn.state_rel_l2[1]) << to_string(d);
  }
  for (DType d : {DType::fp8e4m3, DType::i8}) {
    const auto n = drift(d, InputDist::standard, false, {4096});
    const auto st = drift(d, InputDist::standard, true, {4096});
    EXPECT_GT(st.state_rel_l2[0], 1.2 * n.state_rel_l2[0]) << to_string(d);
    EXPECT_LT(st.state_rel_l2[0], 1.8 * n.state_rel_l2[0]) << to_string(d);
  }
}

}  // namespace
}  // namespace gdn

namespace gdn {
namespace {

CaseRecord drift_record() {
  CaseRecord r;
  r.case_name = "q8", r.variant = "decode/cpu", r.mode = "cold", r.status = CaseStatus::ok;
  r.shape = step_shape(OpKind::decode, DType::fp8e4m3, 4);
  r.drift.heads = 4, r.drift.rows = 32, r.drift.tokens = {4096, 32768, 131072};
  r.drift.state_rel_l2 = {1e-3, 4e-3, 9e-3}, r.drift.o_rel_l2 = {2e-3, 5e-3, kNaN};
  return r;
}

TEST(StateDriftRecord, RoundTripsThroughJsonAndTheSchema) {
  const auto j = to_json(drift_record());
  const auto back = record_from_json(j);
  EXPECT_EQ(back.drift.tokens, drift_record().drift.tokens);
  EXPECT_EQ(back.drift.state_rel_l2, drift_record().drift.state_rel_l2);
  EXPECT_TRUE(std::isnan(back.drift.o_rel_l2[2]));  // null in the file
  EXPECT_EQ(back.shape.state_dtype, DType::fp8e4m3);
  CaseRecord plain = drift_record();
  plain.drift = {};
  EXPECT_FALSE(to_json(plain).contains("drift")) << "records without an 8-bit pool are unchanged";
  auto bad = j;
  bad["drift"]["tokens"] = {4096, -1, 3};
  EXPECT_THROW(record_from_json(bad), std::exception);
  bad = j;
  bad["drift"].erase("o_rel_l2");
  EXPECT_THROW(record_from_json(bad), std::exception);
}

TEST(StateDriftRecord, TableShowsTheColumnAndEveryLength) {
  const std::string t = format_tables({drift_record()}, false, 200);
  EXPECT_NE(t.find("drift@128k"), std::string::npos) << t;
  EXPECT_NE(t.find("S 9.0e-03"), std::string::npos) << t;
  EXPECT_NE(t.find("4k: state 1.0e-03 o 2.0e-03"), std::string::npos) << t;
  CaseRecord plain = drift_record();
  plain.drift = {};
  EXPECT_EQ(format_tables({plain}, false, 200).find("drift"), std::string::npos);
}

}  // namespace
}  // namespace gdn

namespace gdn {
namespace {

TEST(StateQuantFastStep, EightBitCallsRouteToTheirKernels) {
  for (DType d : {DType::fp8e4m3, DType::i8})
    for (int64_t batch : {1, 64, 512}) {
      auto s = step_shape(OpKind::decode, d, batch, 128, 128, 32);
      EXPECT_EQ(step::supports(s), "") << s.key();
      const auto call = step::Call::of(s);
      const auto plan = step::plan_for(call, "");
      EXPECT_EQ(plan.kernel, step::Kernel::decode_vk) << s.key();
      // 8-bit decode: the bf16 choice's bytes per warp (depth 4 up to 128 pairs, else 8).
      EXPECT_EQ(plan.depth, batch * 32 <= 128 ? 4 : 8) << s.key();
      EXPECT_EQ(plan.min_warps(d), plan.depth == 8 ? 16 : 20)
          << "the 8-bit decode build's budget: " << plan.describe(d);
      EXPECT_EQ(step::plan_for(call, "depth=4").depth, 4);
      EXPECT_NE(step::check(step::mma_plan(call), call), "") << "no tensor-core kernel takes 8-bit decode calls";
      EXPECT_THROW(step::plan_for(call, "kernel=mma"), std::invalid_argument);
      // mtp: update calls without the cache from 3 tokens on the tensor-core build; the cache,
      // rollback, read-only forms and shorter calls on tokens_vk.
      for (int tokens : {2, 3, 4, 8, 16})
        for (bool update : {true, false})
          for (bool cache : {false, true}) {
            auto m = step_shape(OpKind::mtp, d, batch, 128, 128, 32);
            m.tokens = tokens, m.update_state = update, m.cache_intermediate = cache, m.rollback = cache && update;
            EXPECT_EQ(step::supports(m), "") << m.key();
            const auto mc = step::Call::of(m);
            const auto mp = step::plan_for(mc, "");
            const bool mma = update && !cache && tokens >= step::kMma8bitMinTokens;
            EXPECT_EQ(mp.kernel, mma ? step::Kernel::mma : step::Kernel::tokens_vk) << m.key();
            EXPECT_EQ(step::check(mp, mc), "") << m.key();
            if (mma) {
              EXPECT_EQ(mp.form, step::MmaForm::bf16) << m.key();
              EXPECT_FALSE(mp.read_only) << m.key();
              EXPECT_EQ(mp.min_warps(d), step::kMmaMinWarps) << mp.describe(d);
              EXPECT_EQ(step::plan_for(mc, "kernel=tokens_vk").kernel, step::Kernel::tokens_vk) << "the A/B stays open";
              EXPECT_THROW(step::plan_for(mc, "form=tf32"), std::invalid_argument);
              EXPECT_THROW(step::plan_for(mc, "kernel=mma_pipelined"), std::invalid_argument);
            } else {
              EXPECT_EQ(mp.min_warps(d), mp.depth == 4 ? 12 : 16) << mp.describe(d);
              // Update calls without the cache take the tensor-core build by override at any T >= 2.
              if (update && !cache) EXPECT_EQ(step::plan_for(mc, "kernel=mma").kernel, step::Kernel::mma) << m.key();
              else EXPECT_THROW(step::plan_for(mc, "kernel=mma"), std::invalid_argument) << m.key();
            }
            EXPECT_THROW(step::plan_for(mc, "kernel=read_only_vk"), std::invalid_argument);
            EXPECT_THROW(step::plan_for(mc, "depth=8"), std::invalid_argument) << "depth 8 is decode's";
          }
    }
  // Depth 8 is the 8-bit decode tile's only.
  for (DType d : {DType::f32, DType::bf16}) {
    auto s = step_shape(OpKind::decode, d, 512, 128, 128, 32);
    EXPECT_THROW(step::plan_for(step::Call::of(s), "depth=8"), std::invalid_argument) << to_string(d);
  }
  // The fp32 and bf16 routing and budgets are those of before.
  auto f = step_shape(OpKind::decode, DType::f32, 512, 128, 128, 32);
  EXPECT_EQ(step::plan_for(step::Call::of(f), "").min_warps(DType::f32), 16);
  auto r = step_shape(OpKind::mtp, DType::bf16, 64, 128, 128, 32);
  r.tokens = 4, r.update_state = false;
  EXPECT_EQ(step::plan_for(step::Call::of(r), "").kernel, step::Kernel::read_only_vk);
}

}  // namespace
}  // namespace gdn

namespace gdn {
namespace {

// The real binary: hostile 8-bit configs exit 3 naming the value; a wrong rounding exits 2.
TEST(StateQuantCli, HostileValuesExitThreeAndTheTruncatingVariantTwo) {
  auto run = [](const std::string& args) { return test::run_shell(std::string(GDN_BINARY) + " " + args + " 2>&1"); };
  auto r = run("verify --op decode -a state_dtype=fp8");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("fp8e4m3, int8"), std::string::npos) << r.out;
  r = run("verify --op mtp -a tokens=4 -a state_dtype=int8 -a layout=kv");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("layout vk"), std::string::npos) << r.out;
  r = run("verify --op prefill -a pool=4 -a state_dtype=fp8e4m3 -a layout=kv -a seqlens=64");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("layout vk"), std::string::npos) << r.out;
  r = run("verify --op decode -a batch=8 -a heads=1/2 -a state_dtype=int8 --variant decode/cpu_q8_truncating");
  EXPECT_EQ(r.code, 2) << r.out;
}

}  // namespace
}  // namespace gdn

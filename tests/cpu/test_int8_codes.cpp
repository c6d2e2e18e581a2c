// The int8 code conversions of the 8-bit decode/mtp kernels (kernels/step/int8_codes.h: byte
// permutes and fp32 adds instead of the conversion unit) against the host quantizer
// (core/state_quant.h), bit for bit, on the host: every code widened, every rounding boundary
// of x r, and whole rows quantized the kernels' way, including rows whose r = 127 / absmax
// overflows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/state_quant.h"
#include "step/int8_codes.h"

namespace gdn {
namespace {

namespace ic = step::int8_codes;

// The code the kernels store for y = x r: the fast form for a finite r, the special one otherwise.
uint8_t kernel_code(float y, bool finite_r) {
  const float z = finite_r ? ic::round_bias(y) : ic::round_bias_special(y);
  return uint8_t(ic::pack(z, ic::kRoundBias, ic::kRoundBias, ic::kRoundBias) & 0xff);
}

TEST(Int8Codes, EveryCodeWidensExactlyAtEveryBytePosition) {
  std::mt19937 rng(7);
  for (int c = 0; c < 256; ++c)
    for (int i = 0; i < 4; ++i) {
      const uint32_t others = rng() & ~(0xffu << (8 * i));
      const uint32_t w = others | uint32_t(c) << (8 * i);
      EXPECT_EQ(ic::widen(w ^ ic::kFlip, i), quant::decode(DType::i8, uint8_t(c))) << "code " << c << " byte " << i;
    }
}

TEST(Int8Codes, PackPutsEachLowByteInItsPlace) {
  const uint32_t w = ic::pack(ic::kRoundBias + 1.f, ic::kRoundBias - 2.f, ic::kRoundBias + 127.f, ic::kRoundBias - 127.f);
  EXPECT_EQ(w, 0x817ffe01u);
}

TEST(Int8Codes, RoundingMatchesTheHostAtEveryBoundary) {
  // |y| <= 127 (1 + 2^-24)^2 is all a finite r gives (int8_codes.h); checked on |y| < 127.5
  // (at -127.5 itself ties-to-even would give -128). Every integer and half-integer
  // in range, +-64 ulps around each, and a stride over every float in range.
  std::vector<float> ys;
  for (int k = -255; k <= 255; ++k) {
    const float centre = 0.5f * float(k);
    uint32_t u = float_to_bits(std::fabs(centre));
    for (int d = -64; d <= 64; ++d) {
      if (d < 0 && u < uint32_t(-d)) continue;
      const float m = bits_to_float(u + d);
      ys.push_back(centre < 0 ? -m : m);
    }
  }
  const uint32_t top = float_to_bits(127.5f);
  for (uint32_t u = 0; u <= top; u += 97) ys.push_back(bits_to_float(u)), ys.push_back(-bits_to_float(u));
  int checked = 0;
  for (float y : ys) {
    if (std::fabs(y) >= 127.5f) continue;
    ASSERT_EQ(kernel_code(y, true), quant::encode(DType::i8, y)) << "y = " << y;
    ++checked;
  }
  EXPECT_GT(checked, 10'000'000);
}

TEST(Int8Codes, OverflowedScaleGivesTheHostsSaturatedCodes) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(kernel_code(inf, false), quant::encode(DType::i8, inf));
  EXPECT_EQ(kernel_code(-inf, false), quant::encode(DType::i8, -inf));
  EXPECT_EQ(kernel_code(std::nanf(""), false), quant::encode(DType::i8, std::nanf("")));
  EXPECT_EQ(kernel_code(200.f, false), 127);
  EXPECT_EQ(kernel_code(-3.25f, false), quant::encode(DType::i8, -3.25f));
}

// Whole rows the kernels' way: absmax, r = 127 / absmax (IEEE, as __fdiv_rn), codes by the fast
// or the special form as r is finite, scale = absmax / 127; against quantize_row.
TEST(Int8Codes, RowsQuantizeAsTheHostQuantizer) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.f, 1.f);
  int special_rows = 0;
  for (int row = 0; row < 20000; ++row) {
    const float magnitude = std::ldexp(1.f, int(rng() % 300) - 150);  // 2^-150 .. 2^149: denormal rows too
    float x[128];
    for (float& v : x) v = normal(rng) * magnitude;
    if (row % 97 == 0) x[rng() % 128] = 0.f;  // zeros in a row (0 x inf in the special form)
    if (row == 0)
      for (float& v : x) v = 0.f;
    uint8_t want[128];
    const float want_scale = quant::quantize_row(DType::i8, x, 128, want);
    float amax = 0.f;
    for (float v : x) amax = std::fmax(amax, std::fabs(v));
    const float r = amax > 0.f ? 127.f / amax : 0.f;
    const bool finite_r = r <= std::numeric_limits<float>::max();
    special_rows += !finite_r;
    for (int e = 0; e < 128; ++e) ASSERT_EQ(kernel_code(x[e] * r, finite_r), want[e]) << "row " << row << " e " << e;
    EXPECT_EQ(float_to_bits(amax / 127.f), float_to_bits(want_scale)) << "row " << row;
  }
  EXPECT_GT(special_rows, 0) << "no row took the overflowed-scale form";
}

}  // namespace
}  // namespace gdn

// kernels/common/bf16_round.h: the branch-free fp32 -> bf16 rounding prefill/sm75_legacy uses
// in its compute_75 code must give the same bits as the host conversion the reference and the
// input generator use (core/half.h), for every class of input. (All 2^32 patterns were checked
// once when it was written; this covers every exponent with the rounding-boundary mantissas.)
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "core/bf16_bits.h"
#include "core/half.h"

namespace gdn {
namespace {

TEST(Bf16Round, MatchesHostConversionAtEveryRoundingBoundary) {
  const uint32_t lows[] = {0x0000, 0x0001, 0x3fff, 0x7ffe, 0x7fff, 0x8000, 0x8001, 0xbfff, 0xfffe, 0xffff};
  int64_t checked = 0;
  for (uint32_t hi = 0; hi < 0x10000u; ++hi)
    for (uint32_t lo : lows) {
      const uint32_t bits = (hi << 16) | lo;
      ASSERT_EQ(bf16_bits_rne(bits), float_to_bf16(bits_to_float(bits))) << std::hex << "bits 0x" << bits;
      ++checked;
    }
  EXPECT_EQ(checked, int64_t(0x10000) * 10);
}

TEST(Bf16Round, RoundsHalfwayToEvenAndOverflowsToInfinity) {
  EXPECT_EQ(bf16_bits_rne(0x3f808000u), 0x3f80u);  // 1 + 2^-8: halfway, even stays
  EXPECT_EQ(bf16_bits_rne(0x3f818000u), 0x3f82u);  // halfway from odd rounds up
  EXPECT_EQ(bf16_bits_rne(0x3f808001u), 0x3f81u);  // just above halfway
  EXPECT_EQ(bf16_bits_rne(float_to_bits(std::numeric_limits<float>::max())), 0x7f80u);
  EXPECT_EQ(bf16_bits_rne(0xff7fffffu), 0xff80u);
  EXPECT_EQ(bf16_bits_rne(0x80000000u), 0x8000u);  // -0 stays -0
}

TEST(Bf16Round, NaNStaysNaN) {
  for (uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xffc00000u, 0xff800001u, 0x7fffffffu}) {
    const uint16_t b = bf16_bits_rne(nan);
    EXPECT_EQ(b & 0x7f80u, 0x7f80u) << std::hex << nan;
    EXPECT_NE(b & 0x007fu, 0u) << std::hex << nan;
  }
}

}  // namespace
}  // namespace gdn

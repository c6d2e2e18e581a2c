// int8 codes of the 8-bit pools (docs/state-8bit.md) widened and rounded with integer byte
// permutes and fp32 adds instead of I2F / F2I: those run on the quarter-rate conversion unit,
// and the decode kernel spent two of them per state element. Host and device share these
// functions, so tests/cpu/test_int8_codes.cpp proves them bit for bit against the host quantizer
// (core/state_quant.h) without a GPU.
#pragma once

#include <cstdint>

#include "core/float_bits.h"
#include "core/host_device.h"

namespace gdn::step::int8_codes {

constexpr uint32_t kFlip = 0x80808080u;      // x ^ 0x80 maps a code b (-128..127) to b + 128
constexpr uint32_t kTwo23 = 0x4b000000u;     // 2^23 as fp32 bits: 2^23 + n for a low byte n
constexpr float kWidenBias = 8388736.f;      // 2^23 + 128
constexpr float kRoundBias = 12582912.f;     // 1.5 x 2^23: y + this rounds y to an integer, ties to even

// PTX prmt (default mode): byte k of the result is byte (s >> 4k) & 7 of the pair (y:x).
GDN_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  const uint64_t xy = uint64_t(y) << 32 | x;
  uint32_t r = 0;
  for (int k = 0; k < 4; ++k) r |= uint32_t(xy >> (8 * ((s >> (4 * k)) & 7)) & 0xff) << (8 * k);
  return r;
#endif
}

// Code i (0..3) of a word whose bytes were flipped by kFlip, as an exact float:
// 2^23 + (b + 128) built from the byte, less 2^23 + 128.
GDN_HD float widen(uint32_t flipped, int i) {
  return bits_to_float(byte_perm(flipped, kTwo23, 0x7540u | uint32_t(i))) - kWidenBias;
}

// y = x r of a finite row with r = 127 / absmax (or 0): |y| <= 127 (1 + 2^-24)^2 < 127.5, so
// y + kRoundBias is 1.5 x 2^23 + RNE(y) exactly and its low byte is the code. The fp32 bits of
// four such sums -> one word of four codes, the first in the lowest byte.
GDN_HD uint32_t pack(float z0, float z1, float z2, float z3) {
  const uint32_t lo = byte_perm(float_to_bits(z0), float_to_bits(z1), 0x0040u), hi = byte_perm(float_to_bits(z2), float_to_bits(z3), 0x0040u);
  return byte_perm(lo, hi, 0x5410u);
}
// The add is never fused with the multiply that made y (__fadd_rn): the host rounds x r first.
GDN_HD float round_bias(float y) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(y, kRoundBias);
#else
  return y + kRoundBias;
#endif
}

// The general form, for rows whose r overflowed (absmax < 127 x 2^-128): x r is +-inf or NaN
// (0 x inf), which the host encodes as +-127 and 0.
GDN_HD float round_bias_special(float y) {
  if (y != y) return kRoundBias;
  return round_bias(y < -127.f ? -127.f : y > 127.f ? 127.f : y);
}

}  // namespace gdn::step::int8_codes

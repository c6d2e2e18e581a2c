// An 8-bit pool row's scale (a value is code x scale) and the inverse its values are multiplied by
// before rounding (docs/method.md 2.5), from the row's absmax: the host quantizer and the kernels
// call these, so every path computes the same bits.
//
// fp8 e4m3: the power of two 2^e, e the least integer with absmax x 2^-e <= 448, taken from
// absmax's bits (no division, no logarithm). It makes x 2^-e and code x 2^e exact, so a value the
// update leaves alone rounds to itself at the next store; a scale of absmax / 448 moves the grid
// with every token and rounds every value again (docs/state-8bit.md, Rounding). e is clamped to
// [-119, 120], where 2^e and 2^-e are both normal: a row below 2^-111 rounds towards zero codes
// instead of overflowing the inverse.
// int8: the IEEE quotients absmax / 127 and 127 / absmax.
// A zero or NaN absmax gives inv 0 (zero codes); an infinite one the quotients (scale inf, inv 0).
#pragma once

#include <cstdint>

#include "core/float_bits.h"
#include "core/host_device.h"

namespace gdn::quant {

struct RowScale {
  float scale, inv;
};

// e for a finite absmax > 0, from its bits: absmax = 1.f x 2^E and 448 = 1.75 x 2^8, so e = E - 8,
// plus one where the mantissa passes 1.75.
GDN_HD int fp8_scale_exponent(uint32_t absmax_bits) {
  const int e = int(absmax_bits >> 23) - 127 - 8 + ((absmax_bits & 0x7fffffu) > 0x600000u ? 1 : 0);
  return e < -119 ? -119 : e;
}

GDN_HD RowScale fp8_row_scale(float absmax) {
  if (!(absmax > 0.f) || absmax > 3.402823466e38f) return {absmax / 448.f, 0.f};
  const int e = fp8_scale_exponent(float_to_bits(absmax));
  return {bits_to_float(uint32_t(e + 127) << 23), bits_to_float(uint32_t(127 - e) << 23)};
}

GDN_HD RowScale int8_row_scale(float absmax) { return {absmax / 127.f, absmax > 0.f ? 127.f / absmax : 0.f}; }

}  // namespace gdn::quant

// The 8-bit state formats of docs/method.md 2.5 on the host: fp8 e4m3 (OCP "e4m3fn": no
// infinities, max 448) and int8, each row of K values with one fp32 scale. The reference, the CPU
// variants, the input generator and the drift estimate share these functions, so every host path
// quantizes a row the same way; the CUDA kernels follow the same steps (kernels/step/README.md).
//
// quantize_row: a = max |x_i| (fp32); s = a / Q and r = Q / a (IEEE fp32 divisions; s = r = 0 for
// a zero row); code_i = RNE(x_i * r), saturated to +-Q (Q = 448 for fp8 e4m3, 127 for int8, so
// the int8 code -128 never occurs). A value is code * s.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/half.h"
#include "core/types.h"

namespace gdn::quant {

inline bool is_8bit(DType d) { return d == DType::fp8e4m3 || d == DType::i8; }

// The largest code magnitude: the row's absmax maps to it.
inline float qmax(DType d) { return d == DType::fp8e4m3 ? 448.f : 127.f; }

// fp8 e4m3fn code -> value: 1 sign, 4 exponent (bias 7), 3 mantissa bits; 0x7f / 0xff are NaN.
inline float fp8e4m3_to_float(uint8_t c) {
  const uint32_t e = (c >> 3) & 0xfu, m = c & 7u;
  float a;
  if ((c & 0x7f) == 0x7f) a = std::numeric_limits<float>::quiet_NaN();
  else if (e == 0) a = float(m) * 0x1.0p-9f;  // subnormal: m / 8 * 2^-6
  else a = bits_to_float(((e + 120u) << 23) | (m << 20));
  return (c & 0x80) ? -a : a;
}

// value -> fp8 e4m3fn code, round to nearest even, saturated to +-448 (PTX cvt .satfinite).
inline uint8_t float_to_fp8e4m3(float x) {
  if (std::isnan(x)) return 0x7f;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const float a = std::fabs(x);
  if (a >= 448.f) return sign | 0x7e;
  // Below 2^-6 the codes are m 2^-9 (m = 0..8, 8 being the first normal code): one rounding.
  if (a < 0x1.0p-6f) return sign | uint8_t(std::nearbyint(a * 512.f));
  uint32_t u = float_to_bits(a);
  u += 0x7ffffu + ((u >> 20) & 1u);  // round the mantissa to 3 bits, ties to even
  const uint32_t code = ((((u >> 23) - 120u) << 3) | ((u >> 20) & 7u));
  return sign | uint8_t(std::min(code, 0x7eu));
}

// One code as a value (int8 codes are two's complement bytes).
inline float decode(DType d, uint8_t c) {
  return d == DType::fp8e4m3 ? fp8e4m3_to_float(c) : float(static_cast<int8_t>(c));
}

// A value already multiplied by r -> its code.
inline uint8_t encode(DType d, float y) {
  if (d == DType::fp8e4m3) return float_to_fp8e4m3(y);
  if (std::isnan(y)) return 0;
  const float r = std::nearbyint(std::clamp(y, -127.f, 127.f));  // default rounding: to nearest even
  return static_cast<uint8_t>(static_cast<int8_t>(r));
}

// Codes of n values and the row's scale (returned).
inline float quantize_row(DType d, const float* x, int64_t n, uint8_t* codes) {
  float a = 0.f;
  for (int64_t i = 0; i < n; ++i) a = std::isnan(x[i]) ? x[i] : std::max(a, std::fabs(x[i]));
  if (a == 0.f) {
    std::fill_n(codes, n, uint8_t{0});
    return 0.f;
  }
  const float q = qmax(d), r = q / a;
  for (int64_t i = 0; i < n; ++i) codes[i] = encode(d, x[i] * r);
  return a / q;
}

inline void dequantize_row(DType d, const uint8_t* codes, float scale, int64_t n, float* x) {
  for (int64_t i = 0; i < n; ++i) x[i] = decode(d, codes[i]) * scale;
}

// The round trip the pool applies to a row: x <- dequantize(quantize(x)).
inline void round_trip_row(DType d, float* x, int64_t n, uint8_t* scratch) {
  const float s = quantize_row(d, x, n, scratch);
  dequantize_row(d, scratch, s, n, x);
}

}  // namespace gdn::quant

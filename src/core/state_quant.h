// The 8-bit state formats of docs/method.md 2.5 on the host: fp8 e4m3 (OCP "e4m3fn": no
// infinities, max 448) and int8, each row of K values with one fp32 scale. The reference, the CPU
// variants, the input generator and the drift estimate share these functions, so every host path
// quantizes a row the same way; the CUDA kernels follow the same steps (kernels/step/README.md).
//
// quantize_row: a = max |x_i| (fp32); the row's scale s and its inverse r (core/row_scale.h: fp8's
// power of two, int8's IEEE quotients a / 127 and 127 / a; s = r = 0 for a zero row); code_i =
// RNE(x_i * r), saturated to +-Q (Q = 448 for fp8 e4m3, 127 for int8, so the int8 code -128 never
// occurs). A value is code * s. Stochastic rounding (the same steps with
// code_i one of the two neighbours of x_i * r, drawn unbiased) is measured by the drift estimate
// only: no pool stores that way (docs/state-8bit.md).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/half.h"
#include "core/row_scale.h"
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

// A uniform draw in [0, 1) (24 bits) from a 64-bit key: splitmix64's finalizer, so any element's
// draw is a function of its coordinates (counter-based: the same on every path and thread).
inline float uniform_draw(uint64_t key) {
  uint64_t z = key + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return float(z >> 40) * 0x1.0p-24f;
}

// y (already multiplied by r) -> the code of one of the two grid points around it, the upper with
// probability (y - lo) / (hi - lo) for u uniform in [0, 1): stochastic rounding, unbiased. Saturated
// to +-Q like encode.
inline uint8_t encode_stochastic(DType d, float y, float u) {
  if (d == DType::i8) {
    const float c = std::clamp(y, -127.f, 127.f), lo = std::floor(c);
    const float r = lo + (u < c - lo ? 1.f : 0.f);
    return static_cast<uint8_t>(static_cast<int8_t>(std::min(r, 127.f)));
  }
  const uint8_t sign = std::signbit(y) ? 0x80 : 0x00;
  const float a = std::min(std::fabs(y), 448.f);
  uint8_t lo_code;
  if (a < 0x1.0p-6f) {
    lo_code = uint8_t(std::floor(a * 512.f));
  } else {
    const uint32_t u32 = float_to_bits(a);
    lo_code = uint8_t((((u32 >> 23) - 120u) << 3) | ((u32 >> 20) & 7u));
  }
  const float lo = fp8e4m3_to_float(lo_code);
  if (lo == a || lo_code >= 0x7e) return sign | lo_code;
  const float hi = fp8e4m3_to_float(uint8_t(lo_code + 1));
  return sign | uint8_t(u < (a - lo) / (hi - lo) ? lo_code + 1 : lo_code);
}

// The row scale of format d (core/row_scale.h).
inline RowScale row_scale(DType d, float absmax) {
  return d == DType::fp8e4m3 ? fp8_row_scale(absmax) : int8_row_scale(absmax);
}

// Whether a stored fp8 row follows the writers' rule (docs/method.md 2.5): scale 0 with zero codes,
// or a power of two 2^e whose largest code is in [224, 448] (below 224 only at the clamp e = -119).
// A reader cannot tell the rule from the values; the verifier checks it on every written row.
inline bool fp8_row_follows_rule(const uint8_t* codes, int64_t n, float scale) {
  float m = 0.f;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(fp8e4m3_to_float(codes[i])));
  if (scale == 0.f) return m == 0.f;
  const uint32_t bits = float_to_bits(scale);
  if ((bits & 0x807fffffu) != 0 || bits == 0) return false;  // a positive normal power of two
  const int e = int(bits >> 23) - 127;
  return e >= -119 && e <= 120 && m <= 448.f && (m >= 224.f || e == -119);
}

// Codes of n values and the row's scale (returned); code(i, y) encodes element i's y = x_i * r.
template <class Code> inline float quantize_row_with(DType d, const float* x, int64_t n, uint8_t* codes, Code&& code) {
  float a = 0.f;
  for (int64_t i = 0; i < n; ++i) a = std::isnan(x[i]) ? x[i] : std::max(a, std::fabs(x[i]));
  if (a == 0.f) {
    std::fill_n(codes, n, uint8_t{0});
    return 0.f;
  }
  const RowScale rs = row_scale(d, a);
  for (int64_t i = 0; i < n; ++i) codes[i] = code(i, x[i] * rs.inv);
  return rs.scale;
}

// Codes of n values rounded to nearest, and the row's scale (returned).
inline float quantize_row(DType d, const float* x, int64_t n, uint8_t* codes) {
  return quantize_row_with(d, x, n, codes, [d](int64_t, float y) { return encode(d, y); });
}

inline void dequantize_row(DType d, const uint8_t* codes, float scale, int64_t n, float* x) {
  for (int64_t i = 0; i < n; ++i) x[i] = decode(d, codes[i]) * scale;
}

// quantize_row with stochastic rounding: u(i) is element i's uniform draw.
template <class Uniform> inline float quantize_row_stochastic(DType d, const float* x, int64_t n, uint8_t* codes, Uniform&& u) {
  return quantize_row_with(d, x, n, codes, [&](int64_t i, float y) { return encode_stochastic(d, y, u(i)); });
}

// The round trip the pool applies to a row: x <- dequantize(quantize(x)).
inline void round_trip_row(DType d, float* x, int64_t n, uint8_t* scratch) {
  const float s = quantize_row(d, x, n, scratch);
  dequantize_row(d, scratch, s, n, x);
}

}  // namespace gdn::quant

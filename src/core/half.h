// Host-side bf16 / fp16 conversions (bit-exact IEEE round-to-nearest-even), so host code and
// the reference never depend on CUDA headers.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/bf16_bits.h"
#include "core/float_bits.h"
#include "core/types.h"

namespace gdn {

inline float bf16_to_float(uint16_t h) { return bits_to_float(uint32_t(h) << 16); }
inline uint16_t float_to_bf16(float f) { return bf16_bits_rne(float_to_bits(f)); }

inline float f16_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    if (man == 0) return bits_to_float(sign);
    float f = std::ldexp(float(man), -24);  // subnormal
    return sign ? -f : f;
  }
  return bits_to_float(sign | ((exp + 112) << 23) | (man << 13));
}
inline uint16_t float_to_f16(float f) {
  uint32_t u = float_to_bits(f), sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u);
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // overflow to inf (after rounding)
  if (a < 0x38800000u) {                                   // subnormal or zero in fp16
    float m = std::fabs(f) * 16777216.0f;                  // 2^24
    return uint16_t(sign | uint32_t(std::nearbyint(m)));
  }
  uint32_t r = a + 0xfffu + ((a >> 13) & 1u) - (112u << 23);
  return uint16_t(sign | (r >> 13));
}

// Loads element i of a 16-bit float tensor of dtype d (bf16 or f16) as float.
inline float half_to_float(DType d, uint16_t h) { return d == DType::f16 ? f16_to_float(h) : bf16_to_float(h); }
inline uint16_t float_to_half(DType d, float f) { return d == DType::f16 ? float_to_f16(f) : float_to_bf16(f); }

// The NaN pattern outputs are poisoned with before a verification run.
constexpr uint16_t kPoison16 = 0x7fc1;
constexpr uint32_t kPoison32 = 0x7fc00001u;

}  // namespace gdn

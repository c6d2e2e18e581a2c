// fp32 -> bf16 bits, round to nearest even, without branches (host and device). compute_75 has
// no bf16 convert instruction, and cuda_bf16.h's fallback for it branches twice per value, which
// splits a hot loop into basic blocks the compiler cannot schedule across. NaN stays a quiet NaN
// (core/half.h's float_to_bf16 is this function).
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace gdn {

GDN_HD uint16_t bf16_bits_rne(uint32_t f32_bits) {
  const uint32_t rounded = (f32_bits + 0x7fffu + ((f32_bits >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (f32_bits >> 16) | 0x40u;
  return uint16_t((f32_bits & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

}  // namespace gdn

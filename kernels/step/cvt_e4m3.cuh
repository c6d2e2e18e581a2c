// fp8 e4m3 <-> packed conversions on whole 32-bit words (sm_89+). The cuda_fp8.h intrinsics take
// a 16-bit pair, so widening the upper pair of a word costs a shift per pair (SHF before each
// F2FP); reading the register's halves directly costs nothing. Same instructions, same rounding.
// Before sm_89 (no fp8 conversions) the cuda_fp8.h intrinsics' software forms stand in.
#pragma once

#include <cuda_fp8.h>

#include <cstdint>

namespace gdn {
namespace ptx {

// The two e4m3 codes in the lower (HI = false) or upper 16 bits of w as two halves (exact):
// the lower code of the pair in the lower half.
template <bool HI> __device__ __forceinline__ uint32_t e4m3x2_to_f16x2(uint32_t w) {
#if __CUDA_ARCH__ < 890
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(HI ? w >> 16 : w & 0xffff), __NV_E4M3);
  return uint32_t(h.x) | uint32_t(h.y) << 16;
#else
  uint32_t d;
  if constexpr (HI)
    asm("{ .reg .b16 lo, hi;\n mov.b32 {lo, hi}, %1;\n cvt.rn.f16x2.e4m3x2 %0, hi;\n}" : "=r"(d) : "r"(w));
  else
    asm("{ .reg .b16 lo, hi;\n mov.b32 {lo, hi}, %1;\n cvt.rn.f16x2.e4m3x2 %0, lo;\n}" : "=r"(d) : "r"(w));
  return d;
#endif
}

// Four fp32 values as four e4m3 codes in one word, x0 in the lowest byte: round to nearest even,
// saturated to +-448, NaN to the NaN code (cvt .satfinite, as __nv_cvt_float2_to_fp8x2).
__device__ __forceinline__ uint32_t f32x4_to_e4m3x4(float x0, float x1, float x2, float x3) {
#if __CUDA_ARCH__ < 890
  return uint32_t(__nv_cvt_float2_to_fp8x2(make_float2(x0, x1), __NV_SATFINITE, __NV_E4M3)) |
         uint32_t(__nv_cvt_float2_to_fp8x2(make_float2(x2, x3), __NV_SATFINITE, __NV_E4M3)) << 16;
#else
  uint32_t d;
  asm("{ .reg .b16 lo, hi;\n cvt.rn.satfinite.e4m3x2.f32 lo, %2, %1;\n cvt.rn.satfinite.e4m3x2.f32 hi, %4, %3;\n"
      " mov.b32 %0, {lo, hi};\n}"
      : "=r"(d)
      : "f"(x0), "f"(x1), "f"(x2), "f"(x3));
  return d;
#endif
}

}  // namespace ptx
}  // namespace gdn

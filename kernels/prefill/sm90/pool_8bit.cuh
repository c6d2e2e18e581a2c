// 8-bit state pools (docs/method.md 2.5) in the sm90 scan: a slot's head is V = 128 rows (value
// columns, vk layout) of K = 128 codes, each row with one fp32 scale. A state warp's 16 columns
// of S^T (state_warp.cuh: s[nt][e], value column lc + g + 8 (e / 2), head dim 8 nt + 2t + (e % 2))
// put each value row on the 4 lanes of a quad, 32 values a lane, so a row's absmax is the lane's
// max over its 32 values and then a max over the quad (two shuffles).
// The steps are the host quantizer's (src/core/state_quant.h): absmax a; the row's scale and
// inverse r (core/row_scale.h; all codes 0 and scale 0 for a zero row); code = RNE(x r) saturated
// to +-Q (fp8 e4m3: cvt.rn.satfinite, NaN -> 0x7f; int8: clamp then round, NaN -> 0). Loading
// widens code x scale (one fp32 multiply, exact for the code, rounded once as on the host).
// The state is read once per sequence and written once per checkpoint and at the end, so the
// codes go a pair (two adjacent head dims) at a time with scalar conversions.
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "core/row_scale.h"
#include "core/slot.h"
#include "prefill/op.h"
#include "prefill/sm90/smem_layout.h"

namespace gdn::sm90 {

struct Fp8Format {
  // The row's scale and its inverse (core/row_scale.h).
  __device__ __forceinline__ static quant::RowScale row_scale(float amax) { return quant::fp8_row_scale(amax); }
  __device__ __forceinline__ static float value(uint32_t c) {
    return __half2float(__half(__nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t(c), __NV_E4M3)));
  }
  __device__ __forceinline__ static uint32_t code(float y) { return __nv_cvt_float_to_fp8(y, __NV_SATFINITE, __NV_E4M3); }
};

struct Int8Format {
  static constexpr float kQ = 127.f;
  __device__ __forceinline__ static quant::RowScale row_scale(float amax) { return quant::int8_row_scale(amax); }
  __device__ __forceinline__ static float value(uint32_t c) { return float(int8_t(uint8_t(c))); }
  __device__ __forceinline__ static uint32_t code(float y) {
    if (y != y) return 0u;
    return uint8_t(int8_t(__float2int_rn(fminf(fmaxf(y, -kQ), kQ))));
  }
};

// Slot `slot`'s head h: its codes and row scales (both null for -1: reads zeros, writes nothing).
struct Slot8 {
  uint8_t* codes = nullptr;
  float* scales = nullptr;
};

__device__ __forceinline__ Slot8 slot_8bit(const prefill::Args& a, float* pool_scale, int64_t slot, int h) {
  if (slot < 0) return {};
  const int64_t rows = (slot * a.HV + h) * int64_t(kHeadDim);  // 64-bit: first row of the head
  return {static_cast<uint8_t*>(a.pool) + rows * kHeadDim, pool_scale + rows};
}

// Sequence n's own slot (indices[n]): its start state and where its final state goes.
__device__ __forceinline__ Slot8 own_slot_8bit(const prefill::Args& a, float* pool_scale, int64_t n, int h) {
  return slot_8bit(a, pool_scale, slot_at(a.indices, a.index_dtype, n), h);
}

// Checkpoint j of sequence n (j < 0: none).
__device__ __forceinline__ Slot8 checkpoint_slot_8bit(const prefill::Args& a, float* pool_scale, int64_t n, int h, int64_t j) {
  if (j < 0) return {};
  return slot_8bit(a, pool_scale, slot_at(a.checkpoint_indices, a.index_dtype, n * a.J + j), h);
}

// Head dim d of value row v of slot r (0 for a null slot): the fixup's read of a sequence's start.
template <class Q> __device__ __forceinline__ float read_8bit(const Slot8& r, int d, int v) {
  if (r.codes == nullptr) return 0.f;
  return __fmul_rn(Q::value(r.codes[int64_t(v) * kHeadDim + d]), r.scales[v]);
}

// A state warp's 16 columns (col: the lane's first value column in the head) from slot r.
template <class Q> __device__ __forceinline__ void load_8bit(float (&s)[kHeadDim / 8][4], int lane, int col, const Slot8& r) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int v = col + g + 8 * half;
    const float scale = r.codes != nullptr ? r.scales[v] : 0.f;
    const uint8_t* row = r.codes + int64_t(v) * kHeadDim + 2 * t;
#pragma unroll
    for (int nt = 0; nt < kHeadDim / 8; ++nt) {
      const uint32_t pair = r.codes != nullptr ? *reinterpret_cast<const uint16_t*>(row + 8 * nt) : 0u;
      s[nt][2 * half] = __fmul_rn(Q::value(pair & 0xffu), scale);
      s[nt][2 * half + 1] = __fmul_rn(Q::value(pair >> 8), scale);
    }
  }
}

// The warp's 16 columns into slot r, each value row with a new scale (nothing when r is null).
template <class Q> __device__ __forceinline__ void store_8bit(const float (&s)[kHeadDim / 8][4], int lane, int col, const Slot8& r) {
  if (r.codes == nullptr) return;
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int v = col + g + 8 * half;
    float amax = 0.f;
#pragma unroll
    for (int nt = 0; nt < kHeadDim / 8; ++nt) amax = fmaxf(amax, fmaxf(fabsf(s[nt][2 * half]), fabsf(s[nt][2 * half + 1])));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
    const float rq = Q::row_scale(amax).inv;
    uint8_t* row = r.codes + int64_t(v) * kHeadDim + 2 * t;
#pragma unroll
    for (int nt = 0; nt < kHeadDim / 8; ++nt) {
      // A zero row is all code 0 (not -0's 0x80 in fp8), as on the host.
      const uint32_t pair = amax > 0.f ? Q::code(__fmul_rn(s[nt][2 * half], rq)) | Q::code(__fmul_rn(s[nt][2 * half + 1], rq)) << 8 : 0u;
      *reinterpret_cast<uint16_t*>(row + 8 * nt) = uint16_t(pair);
    }
    if (t == 0) r.scales[v] = Q::row_scale(amax).scale;
  }
}

}  // namespace gdn::sm90

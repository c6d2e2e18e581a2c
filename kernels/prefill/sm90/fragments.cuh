// m16n8k16 fragments as the prefill/sm90 kernel uses them: the f16 MMA, packing fp32 pairs,
// turning accumulator tiles into A operands, and the addresses ldmatrix reads.
//
// Lane l of a warp is (g, t) = (l / 4, l % 4). An accumulator tile c[4] of an m16n8 product holds
// rows g (c[0], c[1]) and g + 8 (c[2], c[3]), columns 2t and 2t + 1. An A fragment a[4] of an
// m16k16 operand holds rows g / g + 8 at columns 2t, 2t + 1 (a[0] / a[1]) and 2t + 8, 2t + 9
// (a[2] / a[3]); a B fragment b[2] (k16 x n8) holds column g at rows 2t, 2t + 1 (b[0]) and
// 2t + 8, 2t + 9 (b[1]). So the two accumulator tiles of columns 16 kk .. 16 kk + 15 are, packed,
// exactly the A fragment of k-step kk (the FlashAttention-2 register reuse).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "common/gdn_math.cuh"
#include "common/ptx/mma_sync_bf16.cuh"
#include "prefill/sm90/lane_offsets.h"
#include "prefill/sm90/smem_layout.h"

namespace gdn::sm90 {

// Every tensor-core operand is f16, whatever the input type: bf16 operands would cost 1-2e-3 of
// relative error per rounding, too much for the 5e-3 tolerance (tests/cpu/
// test_prefill_sm90_numerics.cpp); f16 keeps 3 more mantissa bits. bf16 q and k are converted
// in shared memory (exact inside f16's range, |x| <= 65504).
__device__ __forceinline__ uint32_t pack_f16x2(float lo, float hi) {
  const __half2 p = __floats2half2_rn(lo, hi);  // .x (low half) = lo
  return (uint32_t(__half_as_ushort(p.y)) << 16) | __half_as_ushort(p.x);
}
// An output element in the input type (round to nearest even).
template <class In> __device__ __forceinline__ uint16_t to_bits(float x);
template <> __device__ __forceinline__ uint16_t to_bits<__nv_bfloat16>(float x) { return dev::f32_to_bf16_bits(x); }
template <> __device__ __forceinline__ uint16_t to_bits<__half>(float x) { return __half_as_ushort(__float2half_rn(x)); }

__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  const uint32_t b[2] = {b0, b1};
  ptx::mma_m16n8k16_f32_f16(d, a, b);
}

// ldmatrix .x2 .trans: two 8 x 8 matrices of 16-bit elements, lanes 0-15 giving the row addresses
// (ldmatrix.cuh has the .x4 forms), so a B fragment (k16 x n8) from a tile stored [k][n].
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], uint32_t saddr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(saddr));
}

// The B fragment (k16 x n8) of a 16 x 8 accumulator tile c used as the next product's right operand:
// each 8 x 8 half packed to f16, then transposed across the warp (movmatrix): lane (g, t) then holds
// rows 2t, 2t + 1 of column g. CCCL's cuda::ptx has no movmatrix, hence inline PTX here.
__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t x) {
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}
__device__ __forceinline__ void acc_to_b(const float (&c)[4], uint32_t (&b)[2]) {
  b[0] = movmatrix_trans(pack_f16x2(c[0], c[1]));
  b[1] = movmatrix_trans(pack_f16x2(c[2], c[3]));
}

// The A fragment of k-step kk from accumulator tiles lo = c[2 kk] and hi = c[2 kk + 1], rounded.
__device__ __forceinline__ void acc_to_a(const float (&lo)[4], const float (&hi)[4], uint32_t (&a)[4]) {
  a[0] = pack_f16x2(lo[0], lo[1]);
  a[1] = pack_f16x2(lo[2], lo[3]);
  a[2] = pack_f16x2(hi[0], hi[1]);
  a[3] = pack_f16x2(hi[2], hi[3]);
}

template <class T> __device__ __forceinline__ void zero(T& x) {
  if constexpr (std::is_array_v<T>) {
#pragma unroll
    for (int i = 0; i < int(std::extent_v<T>); ++i) zero(x[i]);
  } else {
    x = 0;
  }
}

// ---- shared-memory addresses ------------------------------------------------------------------

// ldmatrix row addresses for the three ways the kernel reads a tile (lane = (l / 8, l % 8)):
//  a_rows:    A operand rows r0 .. r0 + 15, columns c0 .. c0 + 15 (a[0..3] of one k-step)
//  b_rows:    B operand of two n-tiles stored as [n][k] (n = rows r0 .. r0 + 15, k = columns
//             c0 .. c0 + 15): {b[0], b[1]} of n-tile r0 / 8, then of r0 / 8 + 1
//  bt_rows:   B operand of two n-tiles stored as [k][n] (k = rows r0 .. r0 + 15, n = columns
//             c0 .. c0 + 15), read with .trans: {b[0], b[1]} of n-tile c0 / 8, then c0 / 8 + 1
struct RowCol {
  int row, col;
};
__device__ __forceinline__ RowCol a_rows(int lane, int r0, int c0) { return {r0 + (lane & 15), c0 + 8 * (lane >> 4)}; }
__device__ __forceinline__ RowCol b_rows(int lane, int r0, int c0) {
  return {r0 + 8 * (lane >> 4) + (lane & 7), c0 + 8 * ((lane >> 3) & 1)};
}
__device__ __forceinline__ RowCol bt_rows(int lane, int r0, int c0) {
  return {r0 + 8 * ((lane >> 3) & 1) + (lane & 7), c0 + 8 * (lane >> 4)};
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

}  // namespace gdn::sm90

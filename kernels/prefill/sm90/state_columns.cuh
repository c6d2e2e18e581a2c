// A state warp's columns of S^T loaded from and stored to a state location (state_ref.cuh) with one
// base address a lane and 64 global accesses at constant offsets (K = V = 128): fp32 pairs of a vk
// row and bf16 pairs of it packed, where the layout makes them adjacent. Every scan and fused twin
// starts with this load and ends with this store (the initial and final state, a segment's buffer,
// a checkpoint). StateRef's per-element read and write take about ten instructions an element,
// run once per warp from a cold instruction cache (ncu, 8/24 1x2048 at block_v 32: the store alone
// was 8 % of the scan's stall samples, most of them waiting for instructions).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "prefill/sm90/smem_layout.h"
#include "prefill/state_ref.cuh"

namespace gdn::sm90 {

// Where s[nt][e] sits from a lane's first element (head dim 2t of its column): in elements in a
// [K][V] (kv) state, in pairs (e, e + 1) of adjacent head dims (e even) in a [V][K] (vk) one.
__device__ __forceinline__ constexpr int kv_offset(int nt, int e) { return (8 * nt + (e & 1)) * kHeadDim + 8 * (e >> 1); }
__device__ __forceinline__ constexpr int vk_pair_offset(int nt, int e) { return (8 * (e >> 1) * kHeadDim + 8 * nt) / 2; }

// The warp's 16 columns of S^T from r (zeros when r is null), the layout of store_state_columns.
__device__ __forceinline__ void load_state_columns(const prefill::StateRef& r, float (&s)[kHeadDim / 8][4], int lane,
                                                   int col) {
  constexpr int D = kHeadDim;
  if (r.p == nullptr) {
#pragma unroll
    for (int nt = 0; nt < D / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[nt][e] = 0.f;
    return;
  }
  const int d0 = 2 * (lane & 3);
  if (!r.vk) {
    const int64_t at = int64_t(d0) * D + col;
    if (r.bf16) {
      const unsigned short* p = static_cast<const unsigned short*>(r.p) + at;
#pragma unroll
      for (int nt = 0; nt < D / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[nt][e] = __bfloat162float(__ushort_as_bfloat16(__ldcg(p + kv_offset(nt, e))));
    } else {
      const float* p = static_cast<const float*>(r.p) + at;
#pragma unroll
      for (int nt = 0; nt < D / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[nt][e] = __ldcg(p + kv_offset(nt, e));
    }
  } else {
    const int64_t at = int64_t(col) * D + d0;
    if (r.bf16) {
      const unsigned int* p = reinterpret_cast<const unsigned int*>(static_cast<const unsigned short*>(r.p) + at);
#pragma unroll
      for (int nt = 0; nt < D / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
          const unsigned int w = __ldcg(p + vk_pair_offset(nt, e));
          s[nt][e] = __uint_as_float(w << 16), s[nt][e + 1] = __uint_as_float(w & 0xffff0000u);
        }
    } else {
      const float2* p = reinterpret_cast<const float2*>(static_cast<const float*>(r.p) + at);
#pragma unroll
      for (int nt = 0; nt < D / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
          const float2 x = __ldcg(p + vk_pair_offset(nt, e));
          s[nt][e] = x.x, s[nt][e + 1] = x.y;
        }
    }
  }
}

// A state warp's 16 columns of S^T (s[nt][e]: value column col + 8 (e / 2), head dim
// 8 nt + 2t + (e % 2), col = the lane's first column in the head's 128) into r (nothing when r is
// null; bf16 rounds to nearest even), K = V = 128.
__device__ __forceinline__ void store_state_columns(const prefill::StateRef& r, const float (&s)[kHeadDim / 8][4],
                                                    int lane, int col) {
  if (r.p == nullptr) return;
  constexpr int D = kHeadDim;
  const int d0 = 2 * (lane & 3);
  if (!r.vk) {  // [K][V]: element (d, v) at d D + v; a lane's elements are in 32 rows, 2 columns
    const int64_t at = int64_t(d0) * D + col;
    if (r.bf16) {
      unsigned short* p = static_cast<unsigned short*>(r.p) + at;
#pragma unroll
      for (int nt = 0; nt < D / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) __stcg(p + kv_offset(nt, e), __bfloat16_as_ushort(__float2bfloat16_rn(s[nt][e])));
    } else {
      float* p = static_cast<float*>(r.p) + at;
#pragma unroll
      for (int nt = 0; nt < D / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) __stcg(p + kv_offset(nt, e), s[nt][e]);
    }
  } else {  // [V][K]: element (d, v) at v D + d; (e, e + 1) are adjacent head dims
    const int64_t at = int64_t(col) * D + d0;
    if (r.bf16) {
      unsigned int* p = reinterpret_cast<unsigned int*>(static_cast<unsigned short*>(r.p) + at);
#pragma unroll
      for (int nt = 0; nt < D / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
          const unsigned int lo = __bfloat16_as_ushort(__float2bfloat16_rn(s[nt][e]));
          const unsigned int hi = __bfloat16_as_ushort(__float2bfloat16_rn(s[nt][e + 1]));
          __stcg(p + vk_pair_offset(nt, e), lo | hi << 16);
        }
    } else {
      float2* p = reinterpret_cast<float2*>(static_cast<float*>(r.p) + at);
#pragma unroll
      for (int nt = 0; nt < D / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; e += 2) __stcg(p + vk_pair_offset(nt, e), make_float2(s[nt][e], s[nt][e + 1]));
    }
  }
}

}  // namespace gdn::sm90

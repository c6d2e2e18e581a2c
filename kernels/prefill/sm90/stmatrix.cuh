// stmatrix: four 8 x 8 matrices of 16-bit elements from the per-thread accumulator fragments into
// shared memory, the reverse of common/ptx/ldmatrix.cuh. Lane l gives the address of row l % 8 of
// matrix l / 8 (16 contiguous bytes, 16-byte aligned); thread T gives, of each matrix, the pair
// (row T / 4, columns 2 (T % 4), 2 (T % 4) + 1), or with .trans the pair (rows 2 (T % 4) and
// 2 (T % 4) + 1, column T / 4), the first element in the low half. CCCL's cuda::ptx has no
// stmatrix, hence inline PTX here.
// The instruction is sm_90+. Compiled for an earlier architecture the same stores are made by
// the warp itself, so the shared memory holds the same bytes (the mma.sync kernels that run on
// sm_80-class GPUs share this code with Hopper's): stmatrix_x4 takes its rows' addresses from the
// lanes that give them (shuffles); stmatrix_x4_trans_tile computes them.
#pragma once

#include <cstdint>

namespace gdn {
namespace ptx {

// With a shared-window address (what __cvta_generic_to_shared gives). All 32 lanes take part.
__device__ __forceinline__ void stmatrix_x4(uint32_t saddr, const uint32_t (&r)[4]) {
#if __CUDA_ARCH__ >= 900
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(saddr), "r"(r[0]), "r"(r[1]), "r"(r[2]),
               "r"(r[3])
               : "memory");
#else
  const int lane = int(threadIdx.x) & 31;
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    const uint32_t row = __shfl_sync(0xffffffffu, saddr, 8 * m + (lane >> 2));
    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(row + 4u * uint32_t(lane & 3)), "r"(r[m]) : "memory");
  }
#endif
}
// sm_90+ only (stmatrix_x4_trans_tile stores without it below).
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t saddr, const uint32_t (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(saddr), "r"(r[0]), "r"(r[1]),
               "r"(r[2]), "r"(r[3])
               : "memory");
}

// stmatrix_x4_trans of a 16 x 16 tile (matrix m at rows 8 (m / 2), columns 8 (m % 2); rows
// row_bytes apart), saddr as stmatrix takes it. The form for GPUs without stmatrix finds every
// address from its own lane's, with no shuffles: thread T stores its pair of matrix m at rows
// 2 (T % 4) and 2 (T % 4) + 1, column T / 4.
__device__ __forceinline__ void stmatrix_x4_trans_tile(uint32_t saddr, uint32_t row_bytes, const uint32_t (&r)[4]) {
#if __CUDA_ARCH__ >= 900
  stmatrix_x4_trans(saddr, r);
#else
  const int lane = int(threadIdx.x) & 31, m0 = lane >> 3;
  // This lane's row (lane % 8 of matrix lane / 8) back to the tile's origin, then to its own pairs.
  const uint32_t tile = saddr - uint32_t((m0 >> 1) * 8 + (lane & 7)) * row_bytes - 16u * uint32_t(m0 & 1);
  const uint32_t at = tile + uint32_t(2 * (lane & 3)) * row_bytes + 2u * uint32_t(lane >> 2);
#pragma unroll
  for (int m = 0; m < 4; ++m)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const uint16_t half = uint16_t(e == 0 ? r[m] & 0xffffu : r[m] >> 16);
      asm volatile("st.shared.b16 [%0], %1;\n" ::"r"(at + uint32_t((m >> 1) * 8 + e) * row_bytes + 16u * uint32_t(m & 1)), "h"(half)
                   : "memory");
    }
#endif
}

}  // namespace ptx
}  // namespace gdn

// stmatrix (sm_90+, so here and not in kernels/common): four 8 x 8 matrices of 16-bit elements
// from the per-thread accumulator fragments into shared memory, the reverse of
// common/ptx/ldmatrix.cuh. Lane l gives the address of row l % 8 of matrix l / 8 (16 contiguous
// bytes, 16-byte aligned); thread T gives, of each matrix, the pair (row T / 4, columns 2 (T % 4),
// 2 (T % 4) + 1), or with .trans the pair (rows 2 (T % 4) and 2 (T % 4) + 1, column T / 4), the
// first element in the low half. CCCL's cuda::ptx has no stmatrix, hence inline PTX here.
#pragma once

#include <cstdint>

namespace gdn {
namespace ptx {

// With a shared-window address (what __cvta_generic_to_shared gives).
__device__ __forceinline__ void stmatrix_x4(uint32_t saddr, const uint32_t (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(saddr), "r"(r[0]), "r"(r[1]), "r"(r[2]),
               "r"(r[3])
               : "memory");
}
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t saddr, const uint32_t (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(saddr), "r"(r[0]), "r"(r[1]),
               "r"(r[2]), "r"(r[3])
               : "memory");
}

}  // namespace ptx
}  // namespace gdn

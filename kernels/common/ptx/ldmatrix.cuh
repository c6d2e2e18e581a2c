// ldmatrix (sm_75+): four 8 x 8 matrices of 16-bit elements from shared memory into the
// per-thread fragments the m16n8k16 MMAs take. Lane l gives the address of row l % 8 of matrix
// l / 8 (16 contiguous bytes, 16-byte aligned); thread T receives, of each matrix, the pair
// (row T / 4, columns 2 (T % 4), 2 (T % 4) + 1), or with .trans the pair (rows 2 (T % 4) and
// 2 (T % 4) + 1, column T / 4), the first element in the low half. CCCL's cuda::ptx has no
// ldmatrix, hence inline PTX here.
#pragma once

#include <cstdint>

namespace gdn {
namespace ptx {

// With a shared-window address (what __cvta_generic_to_shared gives): address arithmetic in 32
// bits, and constant offsets folded into the instruction.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t saddr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(saddr)
               : "memory");
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t saddr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(saddr)
               : "memory");
}

// The same from a generic pointer into shared memory.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
  ldmatrix_x4(r, static_cast<uint32_t>(__cvta_generic_to_shared(row)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
  ldmatrix_x4_trans(r, static_cast<uint32_t>(__cvta_generic_to_shared(row)));
}

}  // namespace ptx
}  // namespace gdn

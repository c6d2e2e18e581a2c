// Warp-level tensor-core MMA (mma.sync, sm_80+): the TF32 m16n8k8 shape with fp32 accumulators.
// CCCL's cuda::ptx has no mma.sync wrapper, hence inline PTX here.
#pragma once

#include <cstdint>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define GDN_HAS_MMA_SYNC_TF32 1
#else
#define GDN_HAS_MMA_SYNC_TF32 0
#endif

namespace gdn {
namespace ptx {

// d[16x8] += A[16x8] (row-major fragment, 4 x tf32 per thread) * B[8x8] (column-major fragment,
// 2 x tf32 per thread); fragment layouts as in the PTX ISA for m16n8k8 .tf32. The tensor cores
// read only the TF32 bits of each operand (the low 13 mantissa bits are dropped).
__device__ inline void mma_m16n8k8_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if GDN_HAS_MMA_SYNC_TF32
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  __trap();
#endif
}

}  // namespace ptx
}  // namespace gdn

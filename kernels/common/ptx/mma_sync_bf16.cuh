// Warp-level tensor-core MMA (mma.sync, sm_80+): the m16n8k16 shape with fp32 accumulators, bf16
// or f16 operands (the same fragment layouts). CCCL's cuda::ptx has no mma.sync wrapper, hence
// inline PTX here.
#pragma once

#include <cstdint>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define GDN_HAS_MMA_SYNC_BF16 1
#else
#define GDN_HAS_MMA_SYNC_BF16 0
#endif

namespace gdn {
namespace ptx {

// d[16x8] += A[16x16] (row-major fragment, 4 x 16-bit pairs per thread) * B[16x8] (column-major
// fragment, 2 x 16-bit pairs per thread); fragment layouts as in the PTX ISA for m16n8k16.
#if GDN_HAS_MMA_SYNC_BF16
#define GDN_MMA_M16N8K16_F32(type)                                                                 \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." type "." type                              \
               ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"             \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                    \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))
#else
#define GDN_MMA_M16N8K16_F32(type) __trap()
#endif
__device__ inline void mma_m16n8k16_f32_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  GDN_MMA_M16N8K16_F32("bf16");
}
__device__ inline void mma_m16n8k16_f32_f16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  GDN_MMA_M16N8K16_F32("f16");
}
#undef GDN_MMA_M16N8K16_F32

}  // namespace ptx
}  // namespace gdn

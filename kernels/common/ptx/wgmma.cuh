// Hopper warpgroup MMA (wgmma.mma_async, PTX ISA 8.0, sm_90a only): named wrappers for the
// instructions gdnbench uses. CCCL's cuda::ptx has no wgmma, hence inline PTX here. Outside
// sm_90a the instruction wrappers trap; callers guard their use with GDN_HAS_WGMMA.
#pragma once

#include <cstdint>

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define GDN_HAS_WGMMA 1
#else
#define GDN_HAS_WGMMA 0
#endif

namespace gdn {
namespace ptx {

// Shared-memory matrix descriptor (PTX "Matrix Descriptor Format"): start address, leading- and
// stride-dimension byte offsets, all encoded >> 4 in 14-bit fields; base offset 0.
__device__ inline uint64_t wgmma_desc_fields(uint32_t smem_addr, uint32_t leading_byte_offset,
                                             uint32_t stride_byte_offset) {
  uint64_t desc = (smem_addr >> 4) & 0x3FFF;
  desc |= static_cast<uint64_t>((leading_byte_offset >> 4) & 0x3FFF) << 16;
  desc |= static_cast<uint64_t>((stride_byte_offset >> 4) & 0x3FFF) << 32;
  return desc;
}

// A tile without swizzle (layout type 0).
__device__ inline uint64_t wgmma_smem_desc(const void* smem, uint32_t leading_byte_offset,
                                           uint32_t stride_byte_offset) {
  return wgmma_desc_fields(static_cast<uint32_t>(__cvta_generic_to_shared(smem)), leading_byte_offset,
                           stride_byte_offset);
}

// A tile in the 128-byte swizzle (layout type 1), 1 KiB aligned at its start (a k-step inside the
// 128-byte row may add up to 96 bytes). K-major: stride_byte_offset is the distance between 8-row
// groups, leading_byte_offset unused; MN-major: stride between 8-row groups of k, leading between
// 64-element column blocks of n.
__device__ inline uint64_t wgmma_smem_desc_sw128(uint32_t smem_addr, uint32_t leading_byte_offset,
                                                 uint32_t stride_byte_offset) {
  return wgmma_desc_fields(smem_addr, leading_byte_offset, stride_byte_offset) | (uint64_t(1) << 62);
}

// Pins the registers' values here: an asm "memory" clobber does not order plain register
// writes, so without this the compiler may move accumulator initialisation past a fence.
template <int N>
__device__ inline void wgmma_fence_operands(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Orders register accesses before the next wgmma (needed before the first one of a chain).
__device__ inline void wgmma_fence() {
#if GDN_HAS_WGMMA
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}

__device__ inline void wgmma_commit_group() {
#if GDN_HAS_WGMMA
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}

// Waits until at most N committed wgmma groups are still pending.
template <int N>
__device__ inline void wgmma_wait_group() {
#if GDN_HAS_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#else
  __trap();
#endif
}

// D[64x256] (fp32, 128 registers per thread of the warpgroup) (+)= A[64x16] * B[16x256], bf16
// operands in shared memory, both K-major. accumulate = false overwrites D.
__device__ inline void wgmma_m64n256k16_f32_bf16_ss(float (&d)[128], uint64_t desc_a, uint64_t desc_b,
                                                    bool accumulate) {
#if GDN_HAS_WGMMA
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(static_cast<int>(accumulate)));
#else
  __trap();
#endif
}

// The 32 fp32 accumulator operands of an m64n64 wgmma, d[0..31], as asm outputs.
#define GDN_WGMMA_D32(d)                                                                                    \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),     \
      "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),      \
      "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),     \
      "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])

// D[64xN] (fp32, N / 2 registers per thread) (+)= A[64x16] * B[16xN], f16 operands, N = 64: A from
// registers (per warp the m16n8k16 A fragment of its 16 rows, so accumulator tiles pack into it),
// B in shared memory, K-major (kTransB 0: stored [n][k]) or MN-major (kTransB 1: stored [k][n]).
template <int N, int kTransB>
__device__ inline void wgmma_m64k16_f32_f16_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc_b, bool accumulate) {
  static_assert(N == 64, "the width the kernels use (narrower products serialized every wgmma: C7511)");
#if GDN_HAS_WGMMA
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n"
      "}\n"
      : GDN_WGMMA_D32(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(static_cast<int>(accumulate)), "n"(kTransB));
#else
  __trap();
#endif
}

// D[64x64] (fp32, 32 registers per thread) (+)= A[64x16] * B[16x64], f16 operands both in shared
// memory, K-major (A stored [m][k], B stored [n][k]). accumulate = false overwrites D.
__device__ inline void wgmma_m64n64k16_f32_f16_ss(float (&d)[32], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
#if GDN_HAS_WGMMA
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n"
      "}\n"
      : GDN_WGMMA_D32(d)
      : "l"(desc_a), "l"(desc_b), "r"(static_cast<int>(accumulate)));
#else
  __trap();
#endif
}

}  // namespace ptx
}  // namespace gdn

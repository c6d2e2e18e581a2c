// 16-byte asynchronous global -> shared copies (cp.async.cg, sm_80+) with an L2 eviction-priority
// hint. CUDA's __pipeline_memcpy_async has no cache-hint form and CCCL's cuda::ptx wraps only the
// bulk (TMA) copies, hence inline PTX here. Completion: __pipeline_commit / __pipeline_wait_prior.
#pragma once

#include <cstdint>

namespace gdn {
namespace ptx {

// An L2 policy that keeps the lines it touches (evict_last) for the whole access. Not volatile:
// the compiler may hoist it out of loops.
__device__ __forceinline__ uint64_t l2_evict_last_policy() {
  uint64_t policy;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

// Copies 16 bytes from global `src` to shared `dst` (both 16-byte aligned) past L1, with `policy`.
__device__ __forceinline__ void cp_async_16_hint(void* dst, const void* src, uint64_t policy) {
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(d), "l"(src), "l"(policy)
               : "memory");
}

// Copies 16 bytes from global `src` to shared `dst` past L1, or writes 16 zero bytes to `dst`
// when `valid` is false (src is then not read, but must still be a global address). For rows
// past the end of a sequence, so a partial tile is zero-padded without a second pass.
// `dst` is a shared-window address (address arithmetic in 32 bits).
__device__ __forceinline__ void cp_async_16_zfill(uint32_t dst, const void* src, bool valid) {
  const uint32_t bytes = valid ? 16u : 0u;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}

// The same from a generic pointer into shared memory.
__device__ __forceinline__ void cp_async_16_zfill(void* dst, const void* src, bool valid) {
  cp_async_16_zfill(static_cast<uint32_t>(__cvta_generic_to_shared(dst)), src, valid);
}

}  // namespace ptx
}  // namespace gdn

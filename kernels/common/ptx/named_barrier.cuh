// Named CTA barriers (bar.sync / bar.arrive with an id and a thread count, sm_70+): a subset of
// a CTA's warps synchronises without the rest (warp specialisation). Id 0 is __syncthreads';
// `count` is a multiple of 32 and counts every thread that syncs or arrives on the id. Like
// __syncthreads, bar.sync orders the shared-memory accesses of the threads taking part. CCCL's
// cuda::ptx names these barrier_sync / barrier_arrive only in newer releases, hence inline PTX.
#pragma once

#include <cstdint>

namespace gdn {
namespace ptx {

// Waits until `count` threads have arrived at barrier `id` (this one included).
__device__ __forceinline__ void named_bar_sync(uint32_t id, uint32_t count) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}

// Arrives at barrier `id` without waiting (the producer side of a producer/consumer pair).
__device__ __forceinline__ void named_bar_arrive(uint32_t id, uint32_t count) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
}

}  // namespace ptx
}  // namespace gdn

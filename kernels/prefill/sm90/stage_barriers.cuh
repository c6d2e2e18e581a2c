// The per-stage mbarriers of the staged kernels (the scan, the fused kernel): full (the producer's
// arrivals: the chunk is in, prepared where the kernel prepares it) and empty (the state warps'
// arrivals: the chunk is consumed). With S stages (at most 3) chunk j's phase of either barrier of
// stage j % S is j / S.
#pragma once

#include <cuda/ptx>

#include <cstdint>

namespace gdn::sm90 {

struct StageBarriers {
  uint64_t full[3], empty[3];
  // Thread 0 initialises; the caller synchronises the CTA before any wait or arrival.
  __device__ __forceinline__ void init(int tid, uint32_t producers, uint32_t consumers) {
    if (tid == 0)
      for (int s = 0; s < 3; ++s) {
        cuda::ptx::mbarrier_init(&full[s], producers);
        cuda::ptx::mbarrier_init(&empty[s], consumers);
      }
  }
};

// Returns once phase `phase` of the mbarrier at bar has completed (phases alternate parity). try_wait
// (sm_90+) suspends the thread for a while inside each test; before sm_90 the thread sleeps between
// tests.
__device__ __forceinline__ void wait_phase(uint64_t* bar, int phase) {
#if __CUDA_ARCH__ >= 900
  while (!cuda::ptx::mbarrier_try_wait_parity(bar, uint32_t(phase & 1))) {
  }
#else
  // test_wait does not suspend: a waiting warp would take issue slots from the state warps, so it
  // sleeps a little between tests.
  while (!cuda::ptx::mbarrier_test_wait_parity(bar, uint32_t(phase & 1))) __nanosleep(20);
#endif
}

}  // namespace gdn::sm90

// The sm90 family's view of prefill/state_ref.cuh: the op's state locations, and the per-segment
// fp32 kv buffers of context parallelism (segments.h) at K = V = 128.
#pragma once

#include <cstdint>

#include "prefill/sm90/smem_layout.h"
#include "prefill/state_ref.cuh"

namespace gdn::sm90 {

using prefill::final_state;
using prefill::initial_state;
using prefill::StateRef;

__device__ __forceinline__ StateRef buffer_state(float* base, int64_t slot, int h, int HV) {
  return prefill::buffer_state(base, slot, h, HV, kHeadDim, kHeadDim);
}

}  // namespace gdn::sm90

// Where a CTA's state starts and ends (SPEC 2.1): h0 / ht in the dense form, slot indices[n] of
// the state pool in the pool form (f32 or bf16, index -1: start from zero and write nothing), or
// one of context parallelism's per-segment buffers (fp32, kv; segments.h). A null pointer reads
// zeros and writes nothing.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "common/gdn_math.cuh"
#include "core/slot.h"
#include "prefill/op.h"
#include "prefill/sm90/smem_layout.h"

namespace gdn::sm90 {

struct StateRef {
  void* p = nullptr;
  bool bf16 = false, vk = false;

  // Element (head dim d, value column v) of the [K][V] (kv) or [V][K] (vk) state.
  __device__ __forceinline__ int64_t at(int d, int v) const {
    return vk ? int64_t(v) * kHeadDim + d : int64_t(d) * kHeadDim + v;
  }
  __device__ __forceinline__ float read(int d, int v) const {
    if (p == nullptr) return 0.f;
    return bf16 ? dev::to_float(static_cast<const __nv_bfloat16*>(p)[at(d, v)]) : static_cast<const float*>(p)[at(d, v)];
  }
  __device__ __forceinline__ void write(int d, int v, float x) const {
    if (bf16) static_cast<__nv_bfloat16*>(p)[at(d, v)] = dev::from_float<__nv_bfloat16>(x);
    else static_cast<float*>(p)[at(d, v)] = x;
  }
};

// A per-head fp32 kv state at `base` (a [slots][HV][K][V] buffer), head h of slot `slot`.
__device__ __forceinline__ StateRef buffer_state(float* base, int64_t slot, int h, int HV) {
  return StateRef{base + (slot * HV + h) * int64_t(kHeadDim) * kHeadDim, false, false};
}

__device__ __forceinline__ StateRef pool_state(const prefill::Args& a, int64_t n, int h) {
  const int64_t slot = slot_at(a.indices, a.index_dtype, n);
  if (slot < 0) return StateRef{nullptr, false, a.layout == Layout::vk};
  const bool bf16 = a.state_dtype == DType::bf16;
  const int64_t elem = (slot * a.HV + h) * int64_t(kHeadDim) * kHeadDim;
  return StateRef{static_cast<uint8_t*>(a.pool) + elem * (bf16 ? 2 : 4), bf16, a.layout == Layout::vk};
}

// Sequence n's initial state of value head h (null: zeros).
__device__ __forceinline__ StateRef initial_state(const prefill::Args& a, int64_t n, int h) {
  if (a.pool != nullptr) return pool_state(a, n, h);
  if (a.h0 == nullptr) return StateRef{nullptr, false, a.layout == Layout::vk};
  return StateRef{const_cast<float*>(a.h0) + (n * a.HV + h) * int64_t(kHeadDim) * kHeadDim, false, a.layout == Layout::vk};
}

// Where sequence n's final state of value head h goes (null: nowhere).
__device__ __forceinline__ StateRef final_state(const prefill::Args& a, int64_t n, int h) {
  if (a.pool != nullptr) return pool_state(a, n, h);
  return StateRef{a.ht + (n * a.HV + h) * int64_t(kHeadDim) * kHeadDim, false, a.layout == Layout::vk};
}

}  // namespace gdn::sm90

// Where a prefill CTA's state starts and ends (docs/method.md 2.1), for every CUDA prefill family: h0 / ht
// in the dense form, slot indices[n] of the state pool in the pool form (f32 or bf16, index -1:
// start from zero and write nothing), or a kernel's own fp32 kv buffer (sm90's per-segment states).
// A null pointer reads zeros and writes nothing.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "common/gdn_math.cuh"
#include "core/slot.h"
#include "prefill/op.h"

namespace gdn::prefill {

struct StateRef {
  void* p = nullptr;
  bool bf16 = false, vk = false;
  int K = 0, V = 0;

  // Element (head dim d, value column v) of the [K][V] (kv) or [V][K] (vk) state.
  __device__ __forceinline__ int64_t at(int d, int v) const { return vk ? int64_t(v) * K + d : int64_t(d) * V + v; }
  __device__ __forceinline__ float read(int d, int v) const {
    if (p == nullptr) return 0.f;
    return bf16 ? dev::to_float(static_cast<const __nv_bfloat16*>(p)[at(d, v)]) : static_cast<const float*>(p)[at(d, v)];
  }
  __device__ __forceinline__ void write(int d, int v, float x) const {
    if (bf16) static_cast<__nv_bfloat16*>(p)[at(d, v)] = dev::from_float<__nv_bfloat16>(x);
    else static_cast<float*>(p)[at(d, v)] = x;
  }
};

// An fp32 kv state of K x V at `base` (a [slots][HV][K][V] buffer), head h of slot `slot`.
__device__ __forceinline__ StateRef buffer_state(float* base, int64_t slot, int h, int HV, int K, int V) {
  return StateRef{base + (slot * HV + h) * int64_t(K) * V, false, false, K, V};
}

__device__ __forceinline__ StateRef pool_state(const Args& a, int64_t n, int h) {
  const bool vk = a.layout == Layout::vk;
  const int64_t slot = slot_at(a.indices, a.index_dtype, n);
  if (slot < 0) return StateRef{nullptr, false, vk, a.K, a.V};
  const bool bf16 = a.state_dtype == DType::bf16;
  const int64_t elem = (slot * a.HV + h) * int64_t(a.K) * a.V;
  return StateRef{static_cast<uint8_t*>(a.pool) + elem * (bf16 ? 2 : 4), bf16, vk, a.K, a.V};
}

// Checkpoint j of sequence n (docs/method.md 2.4), value head h: its slot of the pool (null for -1).
__device__ __forceinline__ StateRef checkpoint_state(const Args& a, int64_t n, int h, int64_t j) {
  const bool vk = a.layout == Layout::vk, bf16 = a.state_dtype == DType::bf16;
  const int64_t slot = slot_at(a.checkpoint_indices, a.index_dtype, n * a.J + j);
  if (slot < 0) return StateRef{nullptr, false, vk, a.K, a.V};
  const int64_t elem = (slot * a.HV + h) * int64_t(a.K) * a.V;
  return StateRef{static_cast<uint8_t*>(a.pool) + elem * (bf16 ? 2 : 4), bf16, vk, a.K, a.V};
}

// Sequence n's initial state of value head h (null: zeros).
__device__ __forceinline__ StateRef initial_state(const Args& a, int64_t n, int h) {
  const bool vk = a.layout == Layout::vk;
  if (a.pool != nullptr) return pool_state(a, n, h);
  if (a.h0 == nullptr) return StateRef{nullptr, false, vk, a.K, a.V};
  return StateRef{const_cast<float*>(a.h0) + (n * a.HV + h) * int64_t(a.K) * a.V, false, vk, a.K, a.V};
}

// Where sequence n's final state of value head h goes (null: nowhere).
__device__ __forceinline__ StateRef final_state(const Args& a, int64_t n, int h) {
  if (a.pool != nullptr) return pool_state(a, n, h);
  return StateRef{a.ht + (n * a.HV + h) * int64_t(a.K) * a.V, false, a.layout == Layout::vk, a.K, a.V};
}

}  // namespace gdn::prefill

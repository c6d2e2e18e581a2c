// The device primitives every CUDA kernel family shares: 16-bit float patterns <-> fp32, the gate
// of docs/method.md 1 (load, then compute), warp sums and the q/k L2 norm. Tensors hold raw 16-bit
// patterns (uint16_t) or fp32; a packed pair keeps its first value in the low half.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "common/gate_args.h"

namespace gdn::dev {

// ---- 16-bit float patterns -------------------------------------------------------------------
// bf16 widening is a shift or a mask, so the packed forms cost one instruction per value.
__device__ __forceinline__ float bf16_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ uint16_t f32_to_bf16_bits(float x) { return __bfloat16_as_ushort(__float2bfloat16_rn(x)); }
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 p = __floats2bfloat162_rn(lo, hi);  // .x (low half) = lo
  return (uint32_t(__bfloat16_as_ushort(p.y)) << 16) | __bfloat16_as_ushort(p.x);
}

// The halves of a packed pair of In (__nv_bfloat16 or __half) widened to fp32.
template <class In> __device__ __forceinline__ float lo16(uint32_t w);
template <class In> __device__ __forceinline__ float hi16(uint32_t w);
template <> __device__ __forceinline__ float lo16<__nv_bfloat16>(uint32_t w) { return bf16_lo(w); }
template <> __device__ __forceinline__ float hi16<__nv_bfloat16>(uint32_t w) { return bf16_hi(w); }
template <> __device__ __forceinline__ float lo16<__half>(uint32_t w) { return __half2float(__ushort_as_half(uint16_t(w))); }
template <> __device__ __forceinline__ float hi16<__half>(uint32_t w) { return __half2float(__ushort_as_half(uint16_t(w >> 16))); }

// One element of a typed tensor to fp32 and back (round to nearest even).
__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
template <class T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }

// ---- the gate (docs/method.md 1) -----------------------------------------------------------------
// load_gate issues the loads and keeps the words as they arrive (an operation on a register whose
// load is in flight waits for it); gate_of does the math later, when the latency of
// the raw form's exp/log1p chain can hide behind other loads.
struct GateIn {
  uint32_t x = 0, y = 0;             // log form: g, beta (fp32 bits); raw form: a, b (bf16 bits)
  float A_log = 0.f, dt_bias = 0.f;  // raw form only
};
__device__ __forceinline__ GateIn load_gate(const GateArgs& ga, int64_t row, int h, int HV) {
  const int64_t i = row * HV + h;
  if (ga.form == GateForm::log) return {__float_as_uint(ga.g[i]), __float_as_uint(ga.beta[i]), 0.f, 0.f};
  return {ga.a[i], ga.b[i], ga.A_log[h], ga.dt_bias[h]};
}

__device__ __forceinline__ float softplus(float x) { return x > 20.f ? x : log1pf(expf(x)); }
__device__ __forceinline__ float sigmoid(float x) { return 1.f / (1.f + expf(-x)); }
// g of the raw form from its per-head factor -exp(A_log) (hoistable), a and dt_bias.
__device__ __forceinline__ float raw_log_decay(float neg_exp_a_log, float a, float dt_bias) {
  return neg_exp_a_log * softplus(a + dt_bias);
}
// g (<= 0) and beta of a loaded gate.
struct Gate {
  float g, beta;
};
__device__ __forceinline__ Gate gate_of(const GateArgs& ga, const GateIn& in) {
  if (ga.form == GateForm::log) return {__uint_as_float(in.x), __uint_as_float(in.y)};
  return {raw_log_decay(-expf(in.A_log), bf16_lo(in.x), in.dt_bias), sigmoid(bf16_lo(in.y))};
}

// ---- reductions and the L2 norm ------------------------------------------------------------------
// Butterfly sum: every lane ends with the same, bit-identical total.
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) x += __shfl_xor_sync(0xffffffffu, x, m);
  return x;
}

// 1 / sqrt(sum(x^2) + eps) over n values in shared memory, computed by one whole warp.
__device__ __forceinline__ float inv_l2norm(const float* x, int n) {
  float s = 0.f;
  for (int i = threadIdx.x % 32; i < n; i += 32) s += x[i] * x[i];
  return 1.f / sqrtf(warp_sum(s) + kL2NormEpsF);
}

}  // namespace gdn::dev

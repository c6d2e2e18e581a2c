// Small device helpers shared by the CUDA variants: 16-bit float loads/stores, the gate math of
// SPEC section 1, warp reductions, the q/k L2 norm, and a launch-error check that throws.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "common/step_args.h"
#include "core/errors.h"

namespace gdn::dev {

// ---- host side: turn a CUDA error into gdn::runtime_error naming the call site -------------
inline void check_cuda(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return;
  throw ::gdn::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what + " failed: " +
                             cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

// ---- element conversions: tensors hold raw 16-bit patterns (uint16_t) or fp32 ---------------
__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }

template <class T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }

__device__ __forceinline__ float bf16_bits_to_float(uint16_t bits) { return __uint_as_float(uint32_t(bits) << 16); }

// ---- gate (SPEC section 1) -------------------------------------------------------------------
struct Gate {
  float g;     // log decay, <= 0
  float beta;  // in [0, 1]
};

__device__ __forceinline__ float softplus(float x) { return x > 20.f ? x : log1pf(expf(x)); }

// Gate of token row `row`, value head h, from either form; all fp32.
__device__ __forceinline__ Gate gate_at(const GateArgs& ga, int64_t row, int HV, int h) {
  const int64_t i = row * HV + h;
  if (ga.form == GateForm::log) return {ga.g[i], ga.beta[i]};
  const float x = bf16_bits_to_float(ga.a[i]) + ga.dt_bias[h];
  const float g = -expf(ga.A_log[h]) * softplus(x);
  const float beta = 1.f / (1.f + expf(-bf16_bits_to_float(ga.b[i])));
  return {g, beta};
}

// ---- reductions ------------------------------------------------------------------------------
// Butterfly sum: every lane ends with the same, bit-identical total.
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) x += __shfl_xor_sync(0xffffffffu, x, m);
  return x;
}

// 1 / sqrt(sum(x^2) + 1e-6) over n values in shared memory, computed by one whole warp.
__device__ __forceinline__ float inv_l2norm(const float* x, int n) {
  float s = 0.f;
  for (int i = threadIdx.x % 32; i < n; i += 32) s += x[i] * x[i];
  return 1.f / sqrtf(warp_sum(s) + 1e-6f);
}

}  // namespace gdn::dev

// Checks a CUDA runtime call (or, after a launch, cudaGetLastError()) and throws with file:line.
#define GDN_CUDA_CHECK(expr) ::gdn::dev::check_cuda((expr), #expr, __FILE__, __LINE__)

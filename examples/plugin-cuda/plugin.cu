// A gdnbench kernel plugin on CUDA (docs/plugins.md): decode as one plain kernel, a block per
// (row, value head) and a thread per state column, the state read from and written back to its
// pool slot in global memory. The worked example of a CUDA plugin, not a fast kernel: gdnbench
// verifies it against the fp64 reference and times it with CUPTI (the L2 flushed before every
// sample), or replays it in a CUDA graph (--mode graph), like its own variants.
//
//   nvcc -O3 -shared -Xcompiler -fPIC -arch=sm_90 -I <gdnbench>/include plugin.cu -o libexample_cuda.so
//   gdnbench run --plugin ./libexample_cuda.so --config configs/decode.yaml --variant 'plugin:*'
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>

#include "gdnbench/kernel.h"

namespace {

__device__ float bf16(uint16_t bits) { return __bfloat162float(__ushort_as_bfloat16(bits)); }

__device__ float load_state(const void* p, int64_t i, bool bf) {
  return bf ? bf16(static_cast<const uint16_t*>(p)[i]) : static_cast<const float*>(p)[i];
}

__device__ void store_state(void* p, int64_t i, float x, bool bf) {
  if (bf) static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(x);
  else static_cast<float*>(p)[i] = x;
}

// The gdn_args fields the kernel reads, by value (the host struct's pointers are device memory).
struct Step {
  gdn_shape s;
  const uint16_t *q, *k, *v;
  const float *g, *beta, *A_log, *dt_bias;
  const uint16_t *a, *b;
  void* pool;
  const void* indices;
  uint16_t* o;
};

// Shared memory: q and k of this row's q/k head, normalised, then the block's partial sums.
__global__ void decode_kernel(Step p) {
  extern __shared__ float smem[];
  const gdn_shape& s = p.s;
  const int64_t row = blockIdx.x;
  const int h = blockIdx.y, K = s.dk, V = s.dv;
  float* q = smem;
  float* k = smem + K;
  const int64_t slot = s.index_dtype == GDN_DTYPE_I32 ? static_cast<const int32_t*>(p.indices)[row]
                                                      : static_cast<const int64_t*>(p.indices)[row];
  uint16_t* o = p.o + (row * s.h_v + h) * V;
  if (slot < 0) {  // a padding row: zeros out, no slot touched
    for (int j = threadIdx.x; j < V; j += blockDim.x) o[j] = 0;
    return;
  }
  const int hk = h / (s.h_v / s.h_qk);
  for (int i = threadIdx.x; i < K; i += blockDim.x) {
    q[i] = bf16(p.q[(row * s.h_qk + hk) * K + i]);
    k[i] = bf16(p.k[(row * s.h_qk + hk) * K + i]);
  }
  __syncthreads();
  if (s.l2norm && threadIdx.x == 0) {  // plain and serial: K is at most 1024
    float nq = 0.f, nk = 0.f;
    for (int i = 0; i < K; ++i) nq += q[i] * q[i], nk += k[i] * k[i];
    smem[2 * K] = rsqrtf(nq + 1e-6f), smem[2 * K + 1] = rsqrtf(nk + 1e-6f);
  }
  __syncthreads();
  const float rq = s.l2norm ? smem[2 * K] : 1.f, rk = s.l2norm ? smem[2 * K + 1] : 1.f;

  const int64_t gi = row * s.h_v + h;
  float decay, beta;
  if (s.gate == GDN_GATE_LOG) {
    decay = expf(p.g[gi]), beta = p.beta[gi];
  } else {
    const float x = bf16(p.a[gi]) + p.dt_bias[h];
    decay = expf(-expf(p.A_log[h]) * (x > 20.f ? x : log1pf(expf(x))));
    beta = 1.f / (1.f + expf(-bf16(p.b[gi])));
  }
  const bool bf = s.state_dtype == GDN_DTYPE_BF16;
  void* state = static_cast<char*>(p.pool) + (slot * s.h_v + h) * int64_t(K) * V * (bf ? 2 : 4);
  for (int j = threadIdx.x; j < V; j += blockDim.x) {
    // Element (i, j) of the [K][V] state, stored [K][V] (kv) or [V][K] (vk).
    auto at = [&](int i) { return s.layout == GDN_LAYOUT_KV ? int64_t(i) * V + j : int64_t(j) * K + i; };
    float pred = 0.f;
    for (int i = 0; i < K; ++i) pred += decay * load_state(state, at(i), bf) * k[i] * rk;
    const float d = beta * (bf16(p.v[gi * V + j]) - pred);
    float out = 0.f;
    for (int i = 0; i < K; ++i) {
      const float x = decay * load_state(state, at(i), bf) + k[i] * rk * d;
      store_state(state, at(i), x, bf);
      out += x * q[i] * rq;
    }
    o[j] = __bfloat16_as_ushort(__float2bfloat16_rn(s.scale * out));
  }
}

int supports(const gdn_shape* s, char* reason, size_t reason_len) {
  if (s->input_dtype != GDN_DTYPE_BF16) {
    std::snprintf(reason, reason_len, "bf16 inputs only (this point has f16)");
    return 0;
  }
  return 1;
}

int decode(const gdn_args* a, void* stream, char* error, size_t error_len) {
  const gdn_shape& s = *a->shape;
  const Step p{s,        static_cast<const uint16_t*>(a->q), static_cast<const uint16_t*>(a->k),
               static_cast<const uint16_t*>(a->v), a->g, a->beta, a->A_log, a->dt_bias, a->a, a->b,
               a->pool,  a->indices, static_cast<uint16_t*>(a->o)};
  const int threads = s.dv >= 128 ? 128 : 32 * ((s.dv + 31) / 32);
  const size_t smem = (2 * size_t(s.dk) + 2) * sizeof(float);
  decode_kernel<<<dim3(unsigned(s.batch), unsigned(s.h_v)), threads, smem, static_cast<cudaStream_t>(stream)>>>(p);
  // Launch errors only: the kernel runs asynchronously on gdnbench's stream.
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) {
    std::snprintf(error, error_len, "decode_kernel did not launch: %s", cudaGetErrorString(e));
    return 1;
  }
  return 0;
}

const gdn_variant kVariants[] = {
    {"decode_simple", GDN_OP_DECODE, GDN_BACKEND_CUDA, 75, 0,
     "example CUDA plugin: a block per (row, value head), the state in global memory", supports, decode, nullptr, 0},
};

const gdn_kernel_table kTable = {GDNBENCH_KERNEL_ABI_VERSION, 1, kVariants};

}  // namespace

extern "C" GDNBENCH_EXPORT const gdn_kernel_table* gdnbench_kernels(void) { return &kTable; }

// Device helpers of the bandwidth-bound decode/mtp kernels (step_kernel.cuh): bf16 bits <-> fp32,
// 16-byte state chunks, lane-group sums, the gate of SPEC section 1, per-warp staging of the token
// inputs (and their norms) in shared memory. C++17, CUDA sm_80+.
#pragma once

#include <cuda/annotated_ptr>
#include <cuda_bf16.h>
#include <cuda_pipeline.h>

#include <cstdint>

#include "decode/op.h"

namespace gdn::fast {

constexpr int kHeadK = 128;      // the head size K these kernels are written for
constexpr int kWarps = 4;        // warps per block; every warp works on its own tile, no block barriers
constexpr int kStageTokens = 16; // tokens whose q/k/v are staged in shared memory at a time
constexpr unsigned kFull = 0xffffffffu;

__device__ __forceinline__ float bf16_bits_to_f32(uint32_t bits16) { return __uint_as_float(bits16 << 16); }
__device__ __forceinline__ float lo_bf16(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float hi_bf16(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ uint16_t f32_to_bf16_bits(float x) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(x));
}
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 p = __floats2bfloat162_rn(lo, hi);  // .x (low half) = lo
  return (uint32_t(__bfloat16_as_ushort(p.y)) << 16) | __bfloat16_as_ushort(p.x);
}

// N consecutive bf16 values (N = 4 or 8, 8- or 16-byte aligned) widened to fp32.
template <int N> __device__ __forceinline__ void load_bf16(const uint16_t* p, float* x) {
  static_assert(N == 4 || N == 8, "4 or 8 values");
  uint32_t w[N / 2];
  if constexpr (N == 4) {
    const uint2 u = *reinterpret_cast<const uint2*>(p);
    w[0] = u.x, w[1] = u.y;
  } else {
    const uint4 u = *reinterpret_cast<const uint4*>(p);
    w[0] = u.x, w[1] = u.y, w[2] = u.z, w[3] = u.w;
  }
#pragma unroll
  for (int i = 0; i < N / 2; ++i) x[2 * i] = lo_bf16(w[i]), x[2 * i + 1] = hi_bf16(w[i]);
}

// Plain 16-byte accesses (token inputs, the cache, diagnostics).
__device__ __forceinline__ uint4 load16(const void* p) { return *reinterpret_cast<const uint4*>(p); }
__device__ __forceinline__ void store16(void* p, uint4 v) { *reinterpret_cast<uint4*>(p) = v; }

// The state access policy of the kernels: a template parameter, so that access hints can be
// measured against each other without copies of the kernels (docs/notes/decode-mtp.md).
struct PlainMem {
  __device__ static uint4 load16(const void* p) { return gdn::fast::load16(p); }
  __device__ static void store16(void* p, uint4 v) { gdn::fast::store16(p, v); }
};

// What ships: the in-place state update reads each line once and writes it back microseconds
// later. Loads are marked persisting (L2 evict_last) so the line is still in L2 when the write
// arrives, and stores are marked normal (evict_normal), which hands the line back to the normal
// replacement order. Measured on H200, decode B = 256 fp32: 280 us plain, 270 us with the load hint
// alone, 264 us with both (the same kernel written out of place: 277 us). CCCL's annotated_ptr
// emits the ld/st.global.L2::cache_hint forms, so no inline PTX is needed.
struct InPlaceMem {
  __device__ static uint4 load16(const void* p) {
    return *cuda::annotated_ptr<const uint4, cuda::access_property::persisting>(static_cast<const uint4*>(p));
  }
  __device__ static void store16(void* p, uint4 v) {
    *cuda::annotated_ptr<uint4, cuda::access_property::normal>(static_cast<uint4*>(p)) = v;
  }
};

// Makes v opaque to the optimiser (an empty asm that "may change" it): a packed tile widened for
// the dots is then widened again for the update instead of being kept widened in twice the
// registers (255 instead of 128 for the bf16 kv decode tile).
__device__ __forceinline__ void opaque(uint4& v) { asm volatile("" : "+r"(v.x), "+r"(v.y), "+r"(v.z), "+r"(v.w)); }

// One 16-byte chunk of state in the pool's dtype (float, or uint16_t = bf16 bits): E values.
template <class TS> struct Chunk;
template <> struct Chunk<float> {
  static constexpr int E = 4;
  __device__ static void widen(uint4 u, float* x) {
    x[0] = __uint_as_float(u.x), x[1] = __uint_as_float(u.y), x[2] = __uint_as_float(u.z), x[3] = __uint_as_float(u.w);
  }
  __device__ static uint4 narrow(const float* x) {
    return make_uint4(__float_as_uint(x[0]), __float_as_uint(x[1]), __float_as_uint(x[2]), __float_as_uint(x[3]));
  }
};
template <> struct Chunk<uint16_t> {
  static constexpr int E = 8;
  __device__ static void widen(uint4 u, float* x) {
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) x[2 * i] = lo_bf16(w[i]), x[2 * i + 1] = hi_bf16(w[i]);
  }
  __device__ static uint4 narrow(const float* x) {
    return make_uint4(pack_bf16x2(x[0], x[1]), pack_bf16x2(x[2], x[3]), pack_bf16x2(x[4], x[5]),
                      pack_bf16x2(x[6], x[7]));
  }
};

// Butterfly sum over the lanes whose ids differ only in the bits kFrom, 2 kFrom, ... < kTo;
// every lane of a group ends with the group's sum.
template <int kFrom, int kTo> __device__ __forceinline__ float sum_lanes(float x) {
#pragma unroll
  for (int m = kFrom; m < kTo; m <<= 1) x += __shfl_xor_sync(kFull, x, m);
  return x;
}

// The gate of one token, in two steps: load_gate issues the loads (early, so that they return
// with the slot index), gate_of does the math (later, while the state loads are in flight). The
// raw form's exp/log1p chain is ~0.3 us of dependent latency that is otherwise exposed at B = 1.
struct TokenGate {
  float decay = 1.f, beta = 0.f;
};
struct GateIn {
  float x = 0.f, y = 0.f;            // log form: g, beta; raw form: a, b
  float A_log = 0.f, dt_bias = 0.f;  // raw form only
};
__device__ __forceinline__ GateIn load_gate(const GateArgs& ga, int64_t row, int h, int HV) {
  const int64_t i = row * HV + h;
  if (ga.form == GateForm::log) return {ga.g[i], ga.beta[i], 0.f, 0.f};
  return {bf16_bits_to_f32(ga.a[i]), bf16_bits_to_f32(ga.b[i]), ga.A_log[h], ga.dt_bias[h]};
}
// exp(g) and beta (SPEC section 1).
__device__ __forceinline__ TokenGate gate_of(const GateArgs& ga, const GateIn& in) {
  if (ga.form == GateForm::log) return {expf(in.x), in.y};
  const float x = in.x + in.dt_bias;
  const float softplus = x > 20.f ? x : log1pf(expf(x));
  return {expf(-expf(in.A_log) * softplus), 1.f / (1.f + expf(-in.y))};
}

// Gates of tokens `lane` and `lane + 32` (T <= 64), read at once so later tokens cost no latency;
// load_gate_inputs issues the loads, gates_of does the math, at() broadcasts token t.
struct WarpGateIn {
  GateIn lo, hi;
};
struct WarpGates {
  TokenGate lo, hi;
  __device__ TokenGate at(int t) const {
    const float decay = t < 32 ? lo.decay : hi.decay, beta = t < 32 ? lo.beta : hi.beta;
    return {__shfl_sync(kFull, decay, t & 31), __shfl_sync(kFull, beta, t & 31)};
  }
};
__device__ __forceinline__ WarpGateIn load_gate_inputs(const decode::Args& a, int64_t b, int h, int lane) {
  WarpGateIn w;
  if (lane < a.T) w.lo = load_gate(a.gate, b * a.T + lane, h, a.HV);
  if (lane + 32 < a.T) w.hi = load_gate(a.gate, b * a.T + lane + 32, h, a.HV);
  return w;
}
__device__ __forceinline__ WarpGates gates_of(const decode::Args& a, const WarpGateIn& in, int lane) {
  WarpGates w;
  if (lane < a.T) w.lo = gate_of(a.gate, in.lo);
  if (lane + 32 < a.T) w.hi = gate_of(a.gate, in.hi);
  return w;
}
__device__ __forceinline__ WarpGates load_gates(const decode::Args& a, int64_t b, int h, int lane) {
  return gates_of(a, load_gate_inputs(a, b, h, lane), lane);
}

// k.k, q.q and k.q of n staged tokens (K bf16 values each, k(j) and q(j) their addresses), all
// tokens at once: G lanes per token (G = 32 / n rounded down to a power of two) each sum 128 / G
// values, then a butterfly; the first lane of token j's group returns token = j, the others -1.
struct TokenSums {
  float kk = 0.f, qq = 0.f, kq = 0.f;
  int token = -1;
};
template <class KAt, class QAt> __device__ __forceinline__ TokenSums token_sums(int n, KAt k, QAt q, int lane) {
  int G = 32;
  while (G * n > 32) G >>= 1;
  const int j = lane / G, sub = lane % G;
  TokenSums t;
  if (j < n) {
    for (int i = sub; i < kHeadK / 4; i += G) {
      const int c = (i + j * G) & (kHeadK / 4 - 1);  // rotated by token: fewer bank conflicts
      float kv[4], qv[4];
      load_bf16<4>(k(j) + c * 4, kv);
      load_bf16<4>(q(j) + c * 4, qv);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        t.kk = fmaf(kv[e], kv[e], t.kk);
        t.qq = fmaf(qv[e], qv[e], t.qq);
        t.kq = fmaf(kv[e], qv[e], t.kq);
      }
    }
  }
  for (int m = 1; m < G; m <<= 1) {
    t.kk += __shfl_xor_sync(kFull, t.kk, m);
    t.qq += __shfl_xor_sync(kFull, t.qq, m);
    t.kq += __shfl_xor_sync(kFull, t.kq, m);
  }
  if (j < n && sub == 0) t.token = j;
  return t;
}

// E (4 or 8) values rounded to bf16 and stored with one 8- or 16-byte store.
template <int E> __device__ __forceinline__ void store_bf16(uint16_t* dst, const float* x) {
  static_assert(E == 4 || E == 8, "4 or 8 values");
  if constexpr (E == 4) {
    *reinterpret_cast<uint2*>(dst) = make_uint2(pack_bf16x2(x[0], x[1]), pack_bf16x2(x[2], x[3]));
  } else {
    *reinterpret_cast<uint4*>(dst) =
        make_uint4(pack_bf16x2(x[0], x[1]), pack_bf16x2(x[2], x[3]), pack_bf16x2(x[4], x[5]), pack_bf16x2(x[6], x[7]));
  }
}

// Shared-memory bytes one warp uses to stage `tokens` tokens whose v slice has `w` values:
// q and k, the v slices (padded to 16 bytes) and one float4 of norms per token.
__host__ __device__ constexpr int stage_bytes(int tokens, int w) {
  return tokens * 4 * kHeadK + (tokens * 2 * w + 15) / 16 * 16 + tokens * 16;
}

// Per-warp staging area for up to kStageTokens tokens: q then k (K bf16 each), v slices, norms.
struct Stage {
  uint16_t* qk;   // [tokens][2][K]
  uint16_t* v;    // [tokens][w]
  float4* norms;  // [tokens]: rk, rq (scale folded in), k.q of the normalised, scaled vectors
  int w;

  __device__ Stage(void* warp_base, int tokens, int w_) : w(w_) {
    char* p = static_cast<char*>(warp_base);
    qk = reinterpret_cast<uint16_t*>(p);
    v = reinterpret_cast<uint16_t*>(p + tokens * 4 * kHeadK);
    norms = reinterpret_cast<float4*>(p + tokens * 4 * kHeadK + (tokens * 2 * w + 15) / 16 * 16);
  }
  __device__ const uint16_t* q(int j) const { return qk + j * 2 * kHeadK; }
  __device__ const uint16_t* k(int j) const { return qk + j * 2 * kHeadK + kHeadK; }
  __device__ float v_at(int j, int i) const { return bf16_bits_to_f32(v[j * w + i]); }

  // Asynchronous copies (no registers held) of tokens [t0, t0 + n) of row b: q and k of q/k
  // head hk and v[h][v0, v0 + w) (w a multiple of 4, v0 too). Wait with finish().
  __device__ void start(const decode::Args& a, int64_t b, int hk, int h, int v0, int t0, int n, int lane) const {
    for (int j = 0; j < n; ++j) {
      const int64_t row = b * a.T + t0 + j;
      // 16 lanes copy q (256 bytes), 16 copy k.
      const uint16_t* src = (lane < 16 ? a.q : a.k) + (row * a.H + hk) * kHeadK + (lane & 15) * 8;
      __pipeline_memcpy_async(qk + j * 2 * kHeadK + lane * 8, src, 16);
    }
    const int per_token = w / 4;  // 8-byte copies
    for (int i = lane; i < n * per_token; i += 32) {
      const int j = i / per_token, c = i % per_token;
      const uint16_t* src = a.v + ((b * a.T + t0 + j) * a.HV + h) * a.V + v0 + c * 4;
      __pipeline_memcpy_async(v + j * w + c * 4, src, 8);
    }
    __pipeline_commit();
  }

  // Waits for start()'s copies, then the norms of the n staged tokens (token_sums).
  __device__ void finish(int n, bool l2norm, float scale, int lane) const {
    __pipeline_wait_prior(0);
    __syncwarp();
    const TokenSums t = token_sums(n, [&](int j) { return k(j); }, [&](int j) { return q(j); }, lane);
    if (t.token >= 0) {
      const float rk = l2norm ? rsqrtf(t.kk + 1e-6f) : 1.f;
      const float rq = (l2norm ? rsqrtf(t.qq + 1e-6f) : 1.f) * scale;
      norms[t.token] = make_float4(rk, rq, t.kq * rk * rq, 0.f);
    }
    __syncwarp();
  }
};

}  // namespace gdn::fast

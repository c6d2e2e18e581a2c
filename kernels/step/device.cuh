// Device helpers of the bandwidth-bound decode/mtp kernels (kernel.cuh): 16-byte state chunks,
// lane-group sums, the gate as the kernels use it, per-warp staging of the token inputs (and their
// norms) in shared memory. C++17, CUDA sm_80+.
#pragma once

#include <cuda/annotated_ptr>
#include <cuda_bf16.h>
#include <cuda_pipeline.h>

#include <cstdint>

#include "common/gdn_math.cuh"
#include "common/ptx/cp_async.cuh"
#include "core/slot.h"
#include "decode/op.h"
#include "step/plan.h"

namespace gdn::step {

constexpr int kWarps = kBlockWarps;  // warps per block; every warp works on its own tile, no block barriers
constexpr int kStageTokens = 16; // tokens whose q/k/v are staged in shared memory at a time
constexpr unsigned kFull = 0xffffffffu;

using dev::bf16_hi;
using dev::bf16_lo;
using dev::f32_to_bf16_bits;
using dev::GateIn;
using dev::load_gate;
using dev::pack_bf16x2;

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
  for (int i = 0; i < N / 2; ++i) x[2 * i] = bf16_lo(w[i]), x[2 * i + 1] = bf16_hi(w[i]);
}

// N consecutive fp32 values (N = 4 or 8, 16-byte aligned) of shared memory.
template <int N> __device__ __forceinline__ void load_f32(const float* p, float* x) {
  static_assert(N == 4 || N == 8, "4 or 8 values");
#pragma unroll
  for (int i = 0; i < N / 4; ++i) {
    const float4 u = reinterpret_cast<const float4*>(p)[i];
    x[4 * i] = u.x, x[4 * i + 1] = u.y, x[4 * i + 2] = u.z, x[4 * i + 3] = u.w;
  }
}

// Plain 16-byte accesses (token inputs, the cache, diagnostics).
__device__ __forceinline__ uint4 load16(const void* p) { return *reinterpret_cast<const uint4*>(p); }
__device__ __forceinline__ void store16(void* p, uint4 v) { *reinterpret_cast<uint4*>(p) = v; }

// The state access policy of the kernels: a template parameter, so that access hints can be
// measured against each other without copies of the kernels (kernels/step/README.md).
// copy16_async: the same load as an asynchronous copy into shared memory (the pipelined
// tensor-core kernel, mtp_mma_pipelined.cuh).
struct PlainMem {
  __device__ static uint4 load16(const void* p) { return gdn::step::load16(p); }
  __device__ static void store16(void* p, uint4 v) { gdn::step::store16(p, v); }
  __device__ static uint32_t load4(const void* p) { return *static_cast<const uint32_t*>(p); }
  __device__ static void store4(void* p, uint32_t v) { *static_cast<uint32_t*>(p) = v; }
  __device__ static void copy16_async(void* smem, const void* p) { __pipeline_memcpy_async(smem, p, 16); }
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
  // 4-byte words (8-bit pools' codes in the T-token kernel's fp32 tile layout), same hints.
  __device__ static uint32_t load4(const void* p) {
    return *cuda::annotated_ptr<const uint32_t, cuda::access_property::persisting>(static_cast<const uint32_t*>(p));
  }
  __device__ static void store4(void* p, uint32_t v) {
    *cuda::annotated_ptr<uint32_t, cuda::access_property::normal>(static_cast<uint32_t*>(p)) = v;
  }
  __device__ static void copy16_async(void* smem, const void* p) {
    ptx::cp_async_16_hint(smem, p, ptx::l2_evict_last_policy());
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
    for (int i = 0; i < 4; ++i) x[2 * i] = bf16_lo(w[i]), x[2 * i + 1] = bf16_hi(w[i]);
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

// Butterfly max over the same lane groups (8-bit pools: a row's absmax).
template <int kFrom, int kTo> __device__ __forceinline__ float max_lanes(float x) {
#pragma unroll
  for (int m = kFrom; m < kTo; m <<= 1) x = fmaxf(x, __shfl_xor_sync(kFull, x, m));
  return x;
}

// Sums N values (N = 2, 4 or 8) over a group of 8 lanes (lane bits 0-2) and leaves one sum in
// each lane: lane cl of the group returns the sum of x[cl / (8 / N)]. Each level exchanges half of
// the remaining values (a transposing butterfly): 7 N / 8 shuffles instead of 3 N.
template <int N, int MASK, int S> __device__ __forceinline__ void halve_sum(float (&x)[S], int lane) {
  const bool hi = lane & MASK;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) {
    const float send = hi ? x[i] : x[i + N / 2], keep = hi ? x[i + N / 2] : x[i];
    x[i] = keep + __shfl_xor_sync(kFull, send, MASK);
  }
}
template <int N> __device__ __forceinline__ float transpose_sum8(const float (&v)[N], int lane) {
  static_assert(N == 2 || N == 4 || N == 8, "2, 4 or 8 values");
  float x[8];
#pragma unroll
  for (int i = 0; i < N; ++i) x[i] = v[i];
  if constexpr (N == 8) {
    halve_sum<8, 4>(x, lane), halve_sum<4, 2>(x, lane), halve_sum<2, 1>(x, lane);
  } else if constexpr (N == 4) {
    halve_sum<4, 4>(x, lane), halve_sum<2, 2>(x, lane);
    x[0] += __shfl_xor_sync(kFull, x[0], 1);
  } else {
    halve_sum<2, 4>(x, lane);
    x[0] += __shfl_xor_sync(kFull, x[0], 2);
    x[0] += __shfl_xor_sync(kFull, x[0], 1);
  }
  return x[0];
}

// Sums 16 values over the whole warp and leaves one sum in each lane: lanes 2 i and 2 i + 1 return
// the sum of x[i] (16 shuffles instead of 80).
__device__ __forceinline__ float transpose_sum32x16(float (&x)[16], int lane) {
  halve_sum<16, 16>(x, lane), halve_sum<8, 8>(x, lane), halve_sum<4, 4>(x, lane), halve_sum<2, 2>(x, lane);
  return x[0] + __shfl_xor_sync(kFull, x[0], 1);
}

// The gate of one token as the kernels use it: exp(g) and beta. dev::load_gate issues the loads
// early (they return with the slot index), token_gate does the math later, while the state loads are
// in flight: the raw form's exp/log1p chain is ~0.3 us of dependent latency, exposed at B = 1.
struct TokenGate {
  float decay = 1.f, beta = 0.f;
};
__device__ __forceinline__ TokenGate token_gate(const GateArgs& ga, const GateIn& in) {
  if (ga.form == GateForm::log) return {expf(__uint_as_float(in.x)), __uint_as_float(in.y)};
  return {expf(dev::raw_log_decay(-expf(in.A_log), bf16_lo(in.x), in.dt_bias)), dev::sigmoid(bf16_lo(in.y))};
}

// Gates of tokens `lane` and `lane + 32` (T <= 64), read at once so later tokens cost no latency;
// load_gate_inputs issues the loads, gates_of does the math, at() broadcasts token t. HI = false:
// the caller has T <= 32, so the second half stays constant and holds no registers.
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
template <bool HI = true>
__device__ __forceinline__ WarpGateIn load_gate_inputs(const decode::Args& a, int64_t b, int h, int lane) {
  WarpGateIn w;
  if (lane < a.T) w.lo = load_gate(a.gate, b * a.T + lane, h, a.HV);
  if (HI && lane + 32 < a.T) w.hi = load_gate(a.gate, b * a.T + lane + 32, h, a.HV);
  return w;
}
template <bool HI = true>
__device__ __forceinline__ WarpGates gates_of(const decode::Args& a, const WarpGateIn& in, int lane) {
  WarpGates w;
  if (lane < a.T) w.lo = token_gate(a.gate, in.lo);
  if (HI && lane + 32 < a.T) w.hi = token_gate(a.gate, in.hi);
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
// q and k (bf16; with f32, fp32 k^ and q^ instead, whose second halves receive the bf16 copies),
// the v slices (padded to 16 bytes) and one float4 of norms per token.
__host__ __device__ constexpr int stage_bytes(int tokens, int w, bool f32 = false) {
  return tokens * (f32 ? 8 : 4) * kHeadK + (tokens * 2 * w + 15) / 16 * 16 + tokens * 16;
}

// Per-warp staging area for up to kStageTokens tokens: q then k (K bf16 each), v slices, norms.
// With f32 a token's slot is 2 K fp32 values, k^ then q^ (the vectors of docs/method.md 1 as the
// dots use them, so the token loop neither widens nor rescales them); the bf16 q and k arrive in
// the slot's second half and are overwritten by q^ once read.
struct Stage {
  uint16_t* qk;   // q(j) at qk + j * qk_stride, k(j) K values later
  uint16_t* v;    // [tokens][w]
  float4* norms;  // [tokens]: rk, rq (scale folded in), k.q of the normalised, scaled vectors
  float* kq32;    // [tokens][2][K]: k^, q^ (nullptr unless f32)
  int qk_stride, w;

  __device__ Stage(void* warp_base, int tokens, int w_, bool f32 = false)
      : qk_stride((f32 ? 4 : 2) * kHeadK), w(w_) {
    char* p = static_cast<char*>(warp_base);
    kq32 = f32 ? reinterpret_cast<float*>(p) : nullptr;
    qk = reinterpret_cast<uint16_t*>(p + (f32 ? 4 * kHeadK : 0));
    v = reinterpret_cast<uint16_t*>(p + tokens * (f32 ? 8 : 4) * kHeadK);
    norms = reinterpret_cast<float4*>(reinterpret_cast<char*>(v) + (tokens * 2 * w + 15) / 16 * 16);
  }
  __device__ const uint16_t* q(int j) const { return qk + j * qk_stride; }
  __device__ const uint16_t* k(int j) const { return qk + j * qk_stride + kHeadK; }
  __device__ const float* k32(int j) const { return kq32 + j * 2 * kHeadK; }
  __device__ const float* q32(int j) const { return kq32 + j * 2 * kHeadK + kHeadK; }
  __device__ float kq(int j) const { return norms[j].z; }
  __device__ float v_at(int j, int i) const { return bf16_lo(v[j * w + i]); }

  // Asynchronous copies (no registers held) of tokens [t0, t0 + n) of row b: q and k of q/k
  // head hk and v[h][v0, v0 + w) (w a multiple of 4, v0 too). Wait with finish().
  __device__ void start(const decode::Args& a, int64_t b, int hk, int h, int v0, int t0, int n, int lane) const {
    for (int j = 0; j < n; ++j) {
      const int64_t row = b * a.T + t0 + j;
      // 16 lanes copy q (256 bytes), 16 copy k.
      const uint16_t* src = (lane < 16 ? a.q : a.k) + (row * a.H + hk) * kHeadK + (lane & 15) * 8;
      __pipeline_memcpy_async(qk + j * qk_stride + lane * 8, src, 16);
    }
    const int per_token = w / 4;  // 8-byte copies
    for (int i = lane; i < n * per_token; i += 32) {
      const int j = i / per_token, c = i % per_token;
      const uint16_t* src = a.v + ((b * a.T + t0 + j) * a.HV + h) * a.V + v0 + c * 4;
      __pipeline_memcpy_async(v + j * w + c * 4, src, 8);
    }
    __pipeline_commit();
  }

  // Waits for start()'s copies, then the norms of the n staged tokens (token_sums) and, with
  // kq32, the fp32 k^ and q^.
  __device__ void finish(int n, bool l2norm, float scale, int lane) const {
    __pipeline_wait_prior(0);
    __syncwarp();
    const TokenSums t = token_sums(n, [&](int j) { return k(j); }, [&](int j) { return q(j); }, lane);
    if (t.token >= 0) {
      const float rk = l2norm ? rsqrtf(t.kk + kL2NormEpsF) : 1.f;
      const float rq = (l2norm ? rsqrtf(t.qq + kL2NormEpsF) : 1.f) * scale;
      norms[t.token] = make_float4(rk, rq, t.kq * rk * rq, 0.f);
    }
    __syncwarp();
    if (kq32 != nullptr) {  // lanes 0-15: k^, 16-31: q^, 8 values each
      const bool is_q = lane >= 16;
      const int off = (lane & 15) * 8;
      for (int j = 0; j < n; ++j) {
        const float r = is_q ? norms[j].y : norms[j].x;
        float x[8];
        load_bf16<8>((is_q ? q(j) : k(j)) + off, x);
        __syncwarp();  // q^ overwrites the bf16 q and k of token j
        float4* dst = reinterpret_cast<float4*>(kq32 + j * 2 * kHeadK + (is_q ? kHeadK : 0) + off);
        dst[0] = make_float4(x[0] * r, x[1] * r, x[2] * r, x[3] * r);
        dst[1] = make_float4(x[4] * r, x[5] * r, x[6] * r, x[7] * r);
      }
      __syncwarp();
    }
  }
};

}  // namespace gdn::step

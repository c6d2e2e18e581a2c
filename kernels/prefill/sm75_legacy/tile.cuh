// Token staging for prefill/sm75_legacy: the block loads the next TS tokens of its (sequence,
// value head) into registers while it runs the current ones (plain loads, so it works on sm_75
// without cp.async), then writes them to shared memory ready for the token loop: q and k
// L2-normalised in fp32 (q also scaled), the per-token k.q, v of the block's columns in fp32,
// and the gate as a within-tile cumulative decay. All of it is shared by the block's warps, so
// it is computed once per block instead of once per warp.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "common/gdn_math.cuh"
#include "prefill/sm75_legacy/config.h"
#include "prefill/op.h"

namespace gdn::legacy {

// What the token loop reads, per tile of TS tokens.
template <int KP, int BC, int TS> struct TileSmem {
  float k[TS + 1][KP];  // k / |k|; the extra row lets the loop read one token ahead blindly
  float q[TS + 1][KP];  // scale * q / |q|
  float v[TS][BC];      // v of the block's columns (0 past V)
  // Per token {P, beta / P, beta, k.q}, P = exp(cumsum of g within the tile), on the fast
  // path; {1, beta, beta, k.q} when the tile decays too fast for it (k, q as stored above).
  float4 tok[TS];
  float decay[TS];      // a = exp(g): the slow path decays X token by token
  int fast;             // the tile's path: P >= kFastMinDecay for every token
};

using dev::hi16;
using dev::lo16;

// Where a block sits: one (sequence, value head, column block).
struct BlockPlace {
  int h, hk;          // value head and its q/k head
  int col0;           // first column of the block
  int64_t bos, eos;   // token range of the sequence
};

// Per-head constants of the raw gate form (unused for the log form).
struct RawGateConsts {
  float neg_a = 0.f;   // -exp(A_log[h])
  float dt_bias = 0.f;
};

// One thread's share of a tile, held in registers between load() and commit().
// Tokens: warp w, pass p, lane group lane/8 stages token (p * W + w) * 4 + lane / 8; its 8
// lanes hold elements 32 i + 4 (lane % 8) + {0..3} of q and k (the layout the token loop reads).
template <class In, int KP, int W, int C, int TS> struct TilePrefetch {
  static constexpr int kRowChunks = KP / 32;
  static constexpr int kPasses = TS / (kGroupsPerWarp * W);
  static constexpr int kBlockCols = W * kGroupsPerWarp * C;
  static constexpr int kThreads = 32 * W;
  static constexpr int kVPerThread = TS * kBlockCols / kThreads;  // = TS * C / 8, even
  static_assert(kPasses * kGroupsPerWarp * W == TS, "warps must divide the tile's token groups");
  static_assert(TS <= 32, "one warp scans the tile's gates");
  static_assert(kVPerThread % 2 == 0 && kVPerThread * kThreads == TS * kBlockCols, "v elements pair up per thread");
  using Smem = TileSmem<KP, kBlockCols, TS>;

  uint2 q[kPasses][kRowChunks], k[kPasses][kRowChunks];
  uint32_t v[kVPerThread / 2];  // two 16-bit values per register
  float gx, gy;  // log: g, beta; raw: a, b (as fp32)

  __device__ __forceinline__ void load(const prefill::Args& a, const BlockPlace& bp, int64_t t0, int nt) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int e0 = 4 * (lane & 7);
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      const int tt = (p * W + warp) * kGroupsPerWarp + (lane >> 3);
      const int64_t base = ((t0 + tt) * a.H + bp.hk) * int64_t(a.K);
#pragma unroll
      for (int i = 0; i < kRowChunks; ++i) {
        const int e = 32 * i + e0;
        const bool ok = tt < nt && e < a.K;
        q[p][i] = ok ? __ldg(reinterpret_cast<const uint2*>(a.q + base + e)) : make_uint2(0u, 0u);
        k[p][i] = ok ? __ldg(reinterpret_cast<const uint2*>(a.k + base + e)) : make_uint2(0u, 0u);
      }
    }
#pragma unroll
    for (int m = 0; m < kVPerThread; ++m) {
      const int idx = int(threadIdx.x) + m * kThreads;
      const int tt = idx / kBlockCols, col = bp.col0 + idx % kBlockCols;
      const bool ok = tt < nt && col < a.V;
      const uint32_t x = ok ? __ldg(a.v + ((t0 + tt) * a.HV + bp.h) * int64_t(a.V) + col) : 0u;
      if (m % 2 == 0) v[m / 2] = x;
      else v[m / 2] |= x << 16;
    }
    gx = gy = 0.f;
    if (warp == W - 1 && lane < nt) {
      const int64_t i = (t0 + lane) * a.HV + bp.h;
      if (a.gate.form == GateForm::log) {
        gx = __ldg(a.gate.g + i);
        gy = __ldg(a.gate.beta + i);
      } else {
        gx = dev::bf16_lo(__ldg(a.gate.a + i));
        gy = dev::bf16_lo(__ldg(a.gate.b + i));
      }
    }
  }

  __device__ __forceinline__ void commit(Smem& s, const prefill::Args& a, const RawGateConsts& raw, int nt) const {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (warp == W - 1) commit_gate(s, a, raw, nt, lane);
    const int e0 = 4 * (lane & 7);
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      const int tt = (p * W + warp) * kGroupsPerWarp + (lane >> 3);
      float qf[kRowChunks][4], kf[kRowChunks][4];
      float ssq = 0.f, ssk = 0.f, dot = 0.f;
#pragma unroll
      for (int i = 0; i < kRowChunks; ++i) {
        qf[i][0] = lo16<In>(q[p][i].x), qf[i][1] = hi16<In>(q[p][i].x);
        qf[i][2] = lo16<In>(q[p][i].y), qf[i][3] = hi16<In>(q[p][i].y);
        kf[i][0] = lo16<In>(k[p][i].x), kf[i][1] = hi16<In>(k[p][i].x);
        kf[i][2] = lo16<In>(k[p][i].y), kf[i][3] = hi16<In>(k[p][i].y);
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          ssq = fmaf(qf[i][r], qf[i][r], ssq);
          ssk = fmaf(kf[i][r], kf[i][r], ssk);
          dot = fmaf(qf[i][r], kf[i][r], dot);
        }
      }
      // The 8 lanes of a group hold one token; xor 4, 2, 1 stays inside the group.
#pragma unroll
      for (int m = 4; m > 0; m >>= 1) {
        ssq += __shfl_xor_sync(0xffffffffu, ssq, m);
        ssk += __shfl_xor_sync(0xffffffffu, ssk, m);
        dot += __shfl_xor_sync(0xffffffffu, dot, m);
      }
      const float rq = a.l2norm ? rsqrtf(ssq + kL2NormEpsF) : 1.f;
      const float rk = a.l2norm ? rsqrtf(ssk + kL2NormEpsF) : 1.f;
      const float sq = rq * a.scale;
#pragma unroll
      for (int i = 0; i < kRowChunks; ++i) {
#pragma unroll
        for (int r = 0; r < 4; ++r) kf[i][r] *= rk, qf[i][r] *= sq;
        const int e = 32 * i + e0;
        *reinterpret_cast<float4*>(&s.k[tt][e]) = make_float4(kf[i][0], kf[i][1], kf[i][2], kf[i][3]);
        *reinterpret_cast<float4*>(&s.q[tt][e]) = make_float4(qf[i][0], qf[i][1], qf[i][2], qf[i][3]);
      }
      if ((lane & 7) == 0) s.tok[tt].w = dot * rk * sq;
    }
#pragma unroll
    for (int m = 0; m < kVPerThread; ++m) {
      const int idx = int(threadIdx.x) + m * kThreads;
      (&s.v[0][0])[idx] = m % 2 == 0 ? lo16<In>(v[m / 2]) : hi16<In>(v[m / 2]);
    }
  }

 private:
  // One warp: gate of token `lane`, an inclusive scan of g over the tile, and the tile's path.
  __device__ __forceinline__ void commit_gate(Smem& s, const prefill::Args& a, const RawGateConsts& raw, int nt,
                                              int lane) const {
    float g = 0.f, beta = 0.f;
    if (lane < nt) {
      if (a.gate.form == GateForm::log) {
        g = gx, beta = gy;
      } else {
        g = dev::raw_log_decay(raw.neg_a, gx, raw.dt_bias);
        beta = dev::sigmoid(gy);
      }
    }
    float cum = g;
#pragma unroll
    for (int d = 1; d < TS; d <<= 1) {
      const float o = __shfl_up_sync(0xffffffffu, cum, d);
      if (lane >= d) cum += o;
    }
    const float P = expf(cum);
    const bool fast = !__any_sync(0xffffffffu, lane < nt && !(P >= kFastMinDecay));
    if (lane < TS) {
      // 1/P <= 1/kFastMinDecay on the fast path. .w (k.q) belongs to the q/k staging lanes.
      float4* t = &s.tok[lane];
      t->x = fast ? P : 1.f;
      t->y = fast ? beta * expf(-cum) : beta;
      t->z = beta;
      s.decay[lane] = expf(g);
    }
    if (lane == 0) s.fast = fast;
  }
};

}  // namespace gdn::legacy

// The recurrent prefill forward of prefill/sm75_legacy (docs/method.md 1) on CUDA cores only:
// FFMA and warp shuffles, no tensor-core instructions, built for compute_75 so it runs on every
// GPU from Turing on. Value columns are independent given k, q and the gate, so the grid
// splits V finely (see config.h) and each thread keeps its K/8 x C slice of the state
// in registers for the whole sequence.
//
// Per token, for each column c (k, q already normalised, q scaled; X the stored state):
//   u = X^T k and w = X^T q from the same registers (both dot products in one pass),
//   u is summed over the 8 lanes of the group by a butterfly (every lane needs it),
//   e = beta (v / P - u), X += k e^T, o = P (w + e (k.q)),
// where the true state is S = P X: the decay is kept as the scalar P (cumulative within the
// tile) instead of scaling every state element per token, and folded into X once per tile.
// w is reduced off the critical path by a reduce-scatter, so each lane ends with one output.
// Tiles whose cumulative decay falls below kFastMinDecay (P would be tiny, 1/P huge) decay X
// token by token instead.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/bf16_bits.h"
#include "core/cuda_check.h"
#include "common/gdn_math.cuh"
#include "prefill/sm75_legacy/config.h"
#include "prefill/sm75_legacy/tile.cuh"
#include "prefill/op.h"
#include "prefill/state_ref.cuh"

namespace gdn::legacy {

// ---- register-array helpers (compile-time indices only, so nothing spills to local memory) --

// x[(j & mask) ? upper half : lower half], recursively: the column a lane keeps after the
// reduce-scatter below.
template <int N> __device__ __forceinline__ float pick_by_lane(const float* x, int j, int mask) {
  if constexpr (N == 1) {
    return x[0];
  } else {
    const float lo = pick_by_lane<N / 2>(x, j, mask >> 1);
    const float hi = pick_by_lane<N / 2>(x + N / 2, j, mask >> 1);
    return (j & mask) ? hi : lo;
  }
}

// Sums x[0..N) over the lanes whose index bits in M, M/2, .., 1 differ, leaving lane j with the
// total of column pick_by_lane(x, j, M): halve the column set per level (xor M, M/2, ..), then
// butterfly the remaining levels. Called with M = 4: the 8 lanes of a group.
template <int N, int M> __device__ __forceinline__ float reduce_scatter(float* x, int j) {
  if constexpr (M == 0) {
    return x[0];
  } else if constexpr (N == 1) {
    x[0] += __shfl_xor_sync(0xffffffffu, x[0], M);
    return reduce_scatter<1, M / 2>(x, j);
  } else {
    constexpr int kHalf = N / 2;
    const bool hi = (j & M) != 0;
#pragma unroll
    for (int i = 0; i < kHalf; ++i) {
      const float send = hi ? x[i] : x[i + kHalf];
      const float keep = hi ? x[i + kHalf] : x[i];
      x[i] = keep + __shfl_xor_sync(0xffffffffu, send, M);
    }
    return reduce_scatter<kHalf, M / 2>(x, j);
  }
}

// Output element store. For compute_75 (what the variant ships as PTX) the bf16 rounding is the
// branch-free bf16_bits_rne: cuda_bf16.h's sm_75 fallback branches inside the token loop, which
// cost 10-18 % on an H200 running the JIT-compiled PTX (bf16 only; f16 converts natively).
template <class In> __device__ __forceinline__ void store_out(In* p, float x);
template <> __device__ __forceinline__ void store_out<__half>(__half* p, float x) { *p = __float2half_rn(x); }
template <> __device__ __forceinline__ void store_out<__nv_bfloat16>(__nv_bfloat16* p, float x) {
#if __CUDA_ARCH__ >= 800
  *p = __float2bfloat16_rn(x);
#else
  *reinterpret_cast<uint16_t*>(p) = bf16_bits_rne(__float_as_uint(x));
#endif
}

// ---- the kernel ----------------------------------------------------------------------------

template <class In, int KP, int C, int W, int TS> struct LegacyPrefill {
  static constexpr int NI = KP / 32;               // 32-row chunks; lane j holds rows 32 i + 4 j + r
  static constexpr int BC = W * kGroupsPerWarp * C;  // block columns
  using Smem = TileSmem<KP, BC, TS>;
  using Prefetch = TilePrefetch<In, KP, W, C, TS>;

  static __device__ __forceinline__ float4 ld4(const float* p) { return *reinterpret_cast<const float4*>(p); }
  static __device__ __forceinline__ float comp(const float4& x, int r) {
    return r == 0 ? x.x : r == 1 ? x.y : r == 2 ? x.z : x.w;
  }

  // The tile's nt tokens, one at a time. kFast: S = P X; else X decays every token.
  // `out` points at this lane's output column of the tile's first token.
  template <bool kFast>
  static __device__ __forceinline__ void run_tile(float (&X)[NI][4][C], const Smem& s, int nt, int vcol, int j,
                                                  In* out, int64_t out_stride, bool writer) {
    const float* kp = &s.k[0][4 * j];
    const float* qp = &s.q[0][4 * j];
    const float* vp = &s.v[0][vcol];
    float4 kn[NI], qn[NI];
#pragma unroll
    for (int i = 0; i < NI; ++i) kn[i] = ld4(kp + 32 * i), qn[i] = ld4(qp + 32 * i);
#pragma unroll 2
    for (int tt = 0; tt < nt; ++tt) {
      float4 kc[NI], qc[NI];
#pragma unroll
      for (int i = 0; i < NI; ++i) kc[i] = kn[i], qc[i] = qn[i];
      // Next token's k and q while this one is reduced (past the last token: an unused row).
      kp += KP;
      qp += KP;
#pragma unroll
      for (int i = 0; i < NI; ++i) kn[i] = ld4(kp + 32 * i), qn[i] = ld4(qp + 32 * i);
      const float4 tk = s.tok[tt];  // {P, beta / P, beta, k.q}
      float vv[C];
#pragma unroll
      for (int c = 0; c < C; ++c) vv[c] = vp[c];
      vp += BC;

      if (!kFast) {
        const float a = s.decay[tt];
#pragma unroll
        for (int i = 0; i < NI; ++i)
#pragma unroll
          for (int r = 0; r < 4; ++r)
#pragma unroll
            for (int c = 0; c < C; ++c) X[i][r][c] *= a;
      }

      // Both dot products in one pass; one partial per 32-row chunk keeps the FMA chains short.
      float u[C], w[C];
#pragma unroll
      for (int c = 0; c < C; ++c) dots(X, kc, qc, c, u[c], w[c]);

      float e[C];
#pragma unroll
      for (int c = 0; c < C; ++c) e[c] = vv[c] * tk.y;
#pragma unroll
      for (int m = 4; m > 0; m >>= 1)
#pragma unroll
        for (int c = 0; c < C; ++c) u[c] += __shfl_xor_sync(0xffffffffu, u[c], m);
#pragma unroll
      for (int c = 0; c < C; ++c) e[c] = fmaf(-tk.z, u[c], e[c]);  // beta (v / P - u)

#pragma unroll
      for (int i = 0; i < NI; ++i)
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
          for (int c = 0; c < C; ++c) X[i][r][c] = fmaf(comp(kc[i], r), e[c], X[i][r][c]);

      // Output (off the critical path): o = P (w + e k.q) for the lane's column.
      const float wl = reduce_scatter<C, 4>(w, j);
      const float el = pick_by_lane<C>(e, j, 4);
      const float o = fmaf(el, tk.w, wl) * tk.x;
      if (writer) store_out<In>(out, o);
      out += out_stride;
    }
  }

  // u = X[:, c] . k and w = X[:, c] . q over the lane's rows.
  static __device__ __forceinline__ void dots(const float (&X)[NI][4][C], const float4 (&k)[NI], const float4 (&q)[NI],
                                              int c, float& u, float& w) {
    float up[NI], wp[NI];
#pragma unroll
    for (int i = 0; i < NI; ++i) {
      up[i] = X[i][0][c] * k[i].x;
      wp[i] = X[i][0][c] * q[i].x;
      up[i] = fmaf(X[i][1][c], k[i].y, up[i]);
      wp[i] = fmaf(X[i][1][c], q[i].y, wp[i]);
      up[i] = fmaf(X[i][2][c], k[i].z, up[i]);
      wp[i] = fmaf(X[i][2][c], q[i].z, wp[i]);
      up[i] = fmaf(X[i][3][c], k[i].w, up[i]);
      wp[i] = fmaf(X[i][3][c], q[i].w, wp[i]);
    }
#pragma unroll
    for (int step = 1; step < NI; step <<= 1)
#pragma unroll
      for (int i = 0; i + step < NI; i += 2 * step) up[i] += up[i + step], wp[i] += wp[i + step];
    u = up[0];
    w = wp[0];
  }

  // Output placement after a reduce-scatter of N column values over the 8 lanes of a group:
  // which one lane j keeps, and whether it is the copy that writes.
  static __device__ __forceinline__ int kept_index(int N, int j) {
    // Mirrors pick_by_lane: bit 4, then 2, then 1 of j halve the index range while N > 1.
    int f = 0;
    for (int m = 4, n = N; m > 0 && n > 1; m >>= 1, n >>= 1)
      if (j & m) f += n / 2;
    return f;
  }
  static __device__ __forceinline__ bool kept_writer(int N, int j) {
    const int copies = N >= kLanesPerGroup ? 1 : kLanesPerGroup / N;
    return (j & (copies - 1)) == 0;
  }

  static __device__ void run(const prefill::Args& a) {
    __shared__ Smem s;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, grp = lane >> 3, j = lane & 7;
    const int ncb = (a.V + BC - 1) / BC;
    const int64_t n = blockIdx.x / ncb;
    BlockPlace bp;
    bp.h = blockIdx.y;
    bp.hk = bp.h / (a.HV / a.H);
    bp.col0 = int(blockIdx.x % ncb) * BC;
    bp.bos = a.cu_seqlens[n];
    bp.eos = a.cu_seqlens[n + 1];
    const int vcol = (warp * kGroupsPerWarp + grp) * C;  // first column of this lane's group, in the block
    const int col = bp.col0 + vcol;
    // Dense h0 / ht, or the pool form's slot (f32 or bf16; index -1: zeros, no write).
    const prefill::StateRef from = prefill::initial_state(a, n, bp.h), to = prefill::final_state(a, n, bp.h);

    const int64_t out_stride = int64_t(a.HV) * a.V;
    In* out_head = reinterpret_cast<In*>(a.o) + bp.h * int64_t(a.V) + col;
    const int out_c = kept_index(C, j);
    const bool writer = kept_writer(C, j) && col + out_c < a.V;
    In* out = out_head + out_c;

    RawGateConsts raw;
    if (a.gate.form == GateForm::raw) {
      raw.neg_a = -expf(__ldg(a.gate.A_log + bp.h));
      raw.dt_bias = __ldg(a.gate.dt_bias + bp.h);
    }

    Prefetch pf;
    int64_t t0 = bp.bos;
    int nt = int(min(int64_t(TS), bp.eos - t0));
    if (nt > 0) pf.load(a, bp, t0, nt);

    float X[NI][4][C];
#pragma unroll
    for (int i = 0; i < NI; ++i)
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const int row = 32 * i + 4 * j + r;
          X[i][r][c] = row < a.K && col + c < a.V ? from.read(row, col + c) : 0.f;
        }

    if (nt > 0) pf.commit(s, a, raw, nt);
    __syncthreads();
    while (nt > 0) {
      const int64_t t1 = t0 + TS;
      const int nt1 = int(max(int64_t(0), min(int64_t(TS), bp.eos - t1)));
      if (nt1 > 0) pf.load(a, bp, t1, nt1);
      if (s.fast) {
        run_tile<true>(X, s, nt, vcol, j, out + t0 * out_stride, out_stride, writer);
        const float p_last = s.tok[nt - 1].x;  // fold the tile's decay into X: S = X again
#pragma unroll
        for (int i = 0; i < NI; ++i)
#pragma unroll
          for (int r = 0; r < 4; ++r)
#pragma unroll
            for (int c = 0; c < C; ++c) X[i][r][c] *= p_last;
      } else {
        run_tile<false>(X, s, nt, vcol, j, out + t0 * out_stride, out_stride, writer);
      }
      __syncthreads();  // every warp is done with this tile
      if (nt1 > 0) pf.commit(s, a, raw, nt1);
      __syncthreads();
      t0 = t1;
      nt = nt1;
    }

#pragma unroll
    for (int i = 0; i < NI; ++i)
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const int row = 32 * i + 4 * j + r;
          if (to.p != nullptr && row < a.K && col + c < a.V) to.write(row, col + c, X[i][r][c]);
        }
  }
};

template <class In, int KP, int C, int W, int TS>
__global__ void __launch_bounds__(32 * W) legacy_prefill_kernel(const prefill::Args a) {
  LegacyPrefill<In, KP, C, W, TS>::run(a);
}

// ---- host dispatch ---------------------------------------------------------------------------

template <class In, int KP, int C, int W, int TS> void launch_with(const prefill::Args& a, cudaStream_t stream) {
  constexpr int BC = W * kGroupsPerWarp * C;
  const int64_t ncb = (a.V + BC - 1) / BC;
  const dim3 grid(unsigned(a.N * ncb), unsigned(a.HV));
  legacy_prefill_kernel<In, KP, C, W, TS><<<grid, 32 * W, 0, stream>>>(a);
}

// The geometries the variant ships (choose_config picks one of them).
template <class In, int KP, int TS> void launch_cols(const prefill::Args& a, const Config& cfg, cudaStream_t stream) {
  constexpr int W = kBlockWarps;
  switch (cfg.cols_per_group) {
    case 4: return launch_with<In, KP, 4, W, TS>(a, stream);
    case 2: return launch_with<In, KP, 2, W, TS>(a, stream);
    default: return launch_with<In, KP, 1, W, TS>(a, stream);
  }
}

template <class In, int KP> void launch_geometry(const prefill::Args& a, const Config& cfg, cudaStream_t stream) {
  if (cfg.tile_tokens == kTileTokensSmall) launch_cols<In, KP, kTileTokensSmall>(a, cfg, stream);
  else launch_cols<In, KP, kTileTokensLarge>(a, cfg, stream);
}

template <class In> void launch_k(const prefill::Args& a, const Config& cfg, cudaStream_t stream) {
  switch (cfg.padded_k) {
    case 32: return launch_geometry<In, 32>(a, cfg, stream);
    case 64: return launch_geometry<In, 64>(a, cfg, stream);
    default: return launch_geometry<In, 128>(a, cfg, stream);
  }
}

// Enqueues the forward on `stream` (no synchronisation). The caller has checked
// unsupported_reason(); cfg comes from choose_config().
inline void launch_prefill(const prefill::Args& a, const Config& cfg, cudaStream_t stream) {
  if (a.input_dtype == DType::f16) launch_k<__half>(a, cfg, stream);
  else launch_k<__nv_bfloat16>(a, cfg, stream);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace gdn::legacy

// The state-independent half of a chunk (docs/method.md A.3), computed from the staged tiles by a
// group of four warps (PrepGroup: the preparation kernel's CTA, or the fused kernel's preparation
// warpgroup) into buffer `buf` of the outputs (smem_layout.h):
//   scalars   beta, gam = inclusive cumsum of g (fp32), the inverse L2 norms rk / rq and the
//             row scalings ek, eq, eu built from them (smem_layout.h enum Scalar); bf16 q and
//             k tiles are converted to f16, the type of every MMA operand (fragments.cuh)
//   products  L_g = Gam * StrictLower(diag(beta) K^ K^T) (fp32) and
//             P_g = scale Gam_incl * (Q^ K^T) (f16), Q^ = diag(rq) Q, K^ = diag(rk) K,
//             on tensor cores from the raw q and k (exact operands): the norms and the gate are
//             applied to the fp32 products, never rounded into the inputs
//   inverse   (I + L_g)^-1 = Gam * (I + L)^-1 in place (FlashQLA's identity, docs/method.md A.2,
//             read the other way: the gate goes in before the inverse, so A_g needs no
//             exponentials of its own): 8 x 8 diagonal blocks by elimination in fp32
//             registers, then the off-diagonal blocks by doubling on tensor cores, f16
//             operands and fp32 accumulation
//   A_g       (I + L_g)^-1 * diag(beta) (f16)
// Exponents: g <= 0, so gam is non-increasing and every exponent below is <= 0 up to rounding;
// each is also clamped at 0 (the parallel cumsum can be an ulp off its sequential value), and
// masked entries are selected away, never multiplied by zero.
#pragma once

#include <cuda/ptx>

#include <cstdint>
#include <type_traits>

#include "common/gdn_math.cuh"
#include "common/ptx/ex2.cuh"
#include "common/ptx/ldmatrix.cuh"
#include "prefill/sm90/stmatrix.cuh"
#include "common/ptx/named_barrier.cuh"
#include "common/ptx/wgmma.cuh"
#include "prefill/op.h"
#include "prefill/sm90/fragments.cuh"
#include "prefill/sm90/smem_layout.h"

namespace gdn::sm90 {

// e^x for x <= 0 (larger x are clamped to 0), as __expf computes it (x log2 e, then the SFU's 2^x)
// but with subnormal results flushed to zero: branch-free.
__device__ __forceinline__ float exp_nonpos(float x) { return ptx::ex2_approx_ftz(fminf(x, 0.f) * 1.4426950408889634f); }

// The threads preparing a chunk: Threads threads in whole warps, numbered tid = 0.., synchronised
// by barrier Barrier (0: the whole CTA, __syncthreads; else a named barrier of Threads threads).
template <int Threads, int Barrier> struct PrepGroup {
  static constexpr int kThreads = Threads, kWarps = Threads / 32;
  int tid;
  __device__ __forceinline__ int warp() const { return tid >> 5; }
  __device__ __forceinline__ void sync() const {
    if constexpr (Barrier == 0) __syncthreads();
    else ptx::named_bar_sync(Barrier, Threads);
  }
};

// Per-token vector `which` of prep-output buffer `buf`.
template <int BV, int Kern> __device__ __forceinline__ float* scalar_vec(uint8_t* smem, int buf, Scalar which) {
  return reinterpret_cast<float*>(smem + SmemLayout(BV, Kern).scalars(buf)) + int(which) * kChunk;
}

// lt holds the inverse's f16 tile (64 x 64 in the 128-byte swizzle: L's blocks left of the diagonal,
// then the T blocks the merges read), then its four diagonal 16 x 16 blocks in fp32 (row stride
// kDiagStride), the eliminations' input and output.
__device__ __forceinline__ float* diagonal_block(uint8_t* lt, int w) {
  return reinterpret_cast<float*>(lt + kHalfTileBytes) + w * 16 * kDiagStride;
}

// Sums of squares of the eight 16-bit values of w, the low halves added to acc[0] and the high
// ones to acc[1] (two chains of half the length); then w converted to f16 in place (the MMA type:
// exact for bf16 values inside f16's range).
template <class In> __device__ __forceinline__ void sum_sq_to_f16(uint4& w, float (&acc)[2]) {
  uint32_t x[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float lo = dev::lo16<In>(x[i]), hi = dev::hi16<In>(x[i]);
    acc[0] = fmaf(lo, lo, acc[0]);
    acc[1] = fmaf(hi, hi, acc[1]);
    x[i] = pack_f16x2(lo, hi);
  }
  w = make_uint4(x[0], x[1], x[2], x[3]);
}

// The chunk's gate and beta vectors of buffer `buf`; `gate` holds token tid's gate words (group
// threads 0..63). No barrier.
template <int BV, int Kern, class Grp>
__device__ __forceinline__ void chunk_gates(const Grp& grp, uint8_t* smem, int buf, const dev::GateIn& gate,
                                            const prefill::Args& a, int rows) {
  const int tid = grp.tid;
  if (tid < kChunk) {
    const bool valid = tid < rows;
    const dev::Gate gt = dev::gate_of(a.gate, gate);
    scalar_vec<BV, Kern>(smem, buf, kG)[tid] = valid ? gt.g : 0.f;
    scalar_vec<BV, Kern>(smem, buf, kBeta)[tid] = valid ? gt.beta : 0.f;
  }
}

// Inverse norms of the 64 k rows, then the 64 q rows of chunk `stage` into buffer `buf`: four
// threads per row, four 16-byte pieces each, combined by two shuffles; bf16 rows are rewritten as
// f16 on the way. Thread (row, q) reads at step c piece (2 q + row % 2 + c % 2) % 8 of half c / 2:
// a 16-byte access is served eight lanes (two rows) at a time, and those eight hit eight different
// bank groups (the halves are 8 KiB apart, on the same banks). The order of a sum does not matter
// here. A thread's rows go two at a time, their eight pieces loaded before any is stored back (the
// compiler cannot move a load above a store to the same tile: one round trip to shared memory per
// piece costs a third of the fused kernel's preparation), and with 128
// threads the four lanes of a row take one of its four rows' square roots each, not one lane all
// four. No barrier.
template <class In, int BV, int Kern, class Grp>
__device__ __forceinline__ void chunk_norms(const Grp& grp, uint8_t* smem, int stage, int buf, const prefill::Args& a,
                                            int rows) {
  constexpr SmemLayout L(BV, Kern);
  constexpr int NT = Grp::kThreads, kItems = 8 * kChunk;  // (row, quarter) items, k rows then q rows
  static_assert(kItems % NT == 0, "whole passes over the rows");
  constexpr int kPasses = kItems / NT, kBatch = kPasses >= 2 ? 2 : 1;
  const int quarter = grp.tid & 3;
  float sums[kPasses];
#pragma unroll
  for (int m0 = 0; m0 < kPasses; m0 += kBatch) {
    uint8_t* piece[kBatch][4];
    uint4 w[kBatch][4];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int e = grp.tid + (m0 + b) * NT;
      const int row = (e >> 2) & (kChunk - 1);
      uint8_t* p = smem + (e >= 4 * kChunk ? L.q(stage) : L.k(stage)) + row * 128;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        piece[b][c] = p + (c >> 1) * kHalfTileBytes + 16 * ((2 * quarter + (row & 1) + (c & 1)) & 7);
        w[b][c] = *reinterpret_cast<const uint4*>(piece[b][c]);
      }
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      float ss[2] = {0.f, 0.f};
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        sum_sq_to_f16<In>(w[b][c], ss);
        if constexpr (!std::is_same_v<In, __half>) *reinterpret_cast<uint4*>(piece[b][c]) = w[b][c];
      }
      float sum = ss[0] + ss[1];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      sums[m0 + b] = sum;  // the same in the row's four lanes
    }
  }
  auto store_norm = [&](int m, float sum) {
    const int e = grp.tid + m * NT;
    const int row = (e >> 2) & (kChunk - 1);
    const float inv = a.l2norm ? 1.f / sqrtf(sum + kL2NormEpsF) : 1.f;
    scalar_vec<BV, Kern>(smem, buf, e >= 4 * kChunk ? kRq : kRk)[row] = row < rows ? inv : 0.f;
  };
  if constexpr (kPasses == 4) {
    // Lane `quarter` of a row's four takes pass `quarter`'s row.
    const float mine = quarter == 0 ? sums[0] : quarter == 1 ? sums[1] : quarter == 2 ? sums[2] : sums[3];
    store_norm(quarter, mine);
  } else {
#pragma unroll
    for (int m = 0; m < kPasses; ++m)
      if (quarter == 0) store_norm(m, sums[m]);
  }
}

// The cumsum of g (two tokens per lane, a shuffle scan across lanes), done by every warp alike, and
// the row scalings from it and the norms, each warp writing its share of the tokens (warp 0 alone
// writing all 64 kept the others waiting at the next barrier), into buffer `buf`. No barrier.
template <int BV, int Kern, class Grp>
__device__ __forceinline__ void chunk_scalings(const Grp& grp, uint8_t* smem, int buf, const prefill::Args& a, int rows) {
  constexpr SmemLayout L(BV, Kern);
  constexpr int kLanesPerWarp = 32 / Grp::kWarps;  // lanes whose tokens a warp writes
  static_assert(32 % Grp::kWarps == 0, "whole lane ranges per warp");
  const int lane = grp.tid & 31;
  auto sv = [&](Scalar which) { return scalar_vec<BV, Kern>(smem, buf, which); };
  const float* g = sv(kG);
  const float g0 = g[2 * lane], g1 = g[2 * lane + 1];
  float incl = g0 + g1;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const float y = __shfl_up_sync(0xffffffffu, incl, d);
    if (lane >= d) incl += y;
  }
  float excl = __shfl_up_sync(0xffffffffu, incl, 1);
  if (lane == 0) excl = 0.f;
  const float gam[2] = {excl + g0, excl + g0 + g1};
  const float G = __shfl_sync(0xffffffffu, gam[1], 31);  // = gam at the last valid token (g = 0 past it)
  if (lane / kLanesPerWarp == grp.warp()) {
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      const int i = 2 * lane + s;
      const float e_gam = exp_nonpos(gam[s]);
      sv(kGam)[i] = gam[s];
      sv(kEk)[i] = sv(kRk)[i] * e_gam;
      sv(kEq)[i] = a.scale * sv(kRq)[i] * e_gam;
      sv(kEu)[i] = i < rows ? sv(kRk)[i] * exp_nonpos(G - gam[s]) : 0.f;
    }
  }
  // e^G for the state's decay, and G itself beside it in the padding.
  if (grp.tid == 0) *reinterpret_cast<float2*>(smem + L.exp_G(buf)) = make_float2(exp_nonpos(G), G);
}

// Per-token vectors of chunk `stage` with `rows` valid tokens into buffer `buf`; `gate` holds
// token tid's gate words (group threads 0..63). Two group barriers. kNorms false: the norms (and
// the f16 rewrite) are already done, by other warps (the fused kernel's state warpgroups).
template <class In, int BV, int Kern, bool kNorms = true, class Grp>
__device__ __forceinline__ void chunk_scalars(const Grp& grp, uint8_t* smem, int stage, int buf, const dev::GateIn& gate,
                                              const prefill::Args& a, int rows) {
  chunk_gates<BV, Kern>(grp, smem, buf, gate, a, rows);
  if constexpr (kNorms) chunk_norms<In, BV, Kern>(grp, smem, stage, buf, a, rows);
  grp.sync();
  chunk_scalings<BV, Kern>(grp, smem, buf, a, rows);
  grp.sync();
}

// One row block of L (IsQ false) or of P_g (IsQ true): rows 16 RB .. 16 RB + 15 against the
// n-tiles on or below the diagonal, on tensor cores into acc (product_mma), then scaled in fp32
// and stored (product_store); the row block is a template argument so the loops unroll with no
// guards, and the masks are selects.
template <int RB> using RowBlockAcc = float[2 * (RB + 1)][4];

template <bool IsQ, int RB, int BV, int Kern>
__device__ __forceinline__ void product_mma(int lane, uint8_t* smem, int stage, RowBlockAcc<RB>& acc) {
  constexpr SmemLayout L(BV, Kern);
  const uint32_t s0 = smem_u32(smem);
  const uint32_t a_base = s0 + (IsQ ? L.q(stage) : L.k(stage)) + a_lane(lane), b_base = s0 + L.k(stage) + b_lane(lane);
  zero(acc);
#pragma unroll
  for (int kk = 0; kk < kHeadDim / 16; ++kk) {
    uint32_t af[4];
    ptx::ldmatrix_x4(af, ((a_base ^ xor_of(kk)) + half_of(kk)) + uint32_t(RB) * 2048);
    const uint32_t b_kk = (b_base ^ xor_of(kk)) + half_of(kk);
#pragma unroll
    for (int np = 0; np <= RB; ++np) {
      uint32_t bf[4];
      ptx::ldmatrix_x4(bf, b_kk + uint32_t(np) * 2048);
      mma(acc[2 * np], af, bf[0], bf[1]);
      mma(acc[2 * np + 1], af, bf[2], bf[3]);
    }
  }
}

// P_g's row block also gets its zeros right of the diagonal.
// The gate e^(gam_i - gam_j): left of the row block's diagonal 16 x 16 block (j < 16 RB <= i) it
// is e^(gam_i - c) e^(c - gam_j) with c = gam at row 16 RB, each factor at most 1 (gam does not
// increase), so a row factor and a column factor of two exponentials each replace an exponential
// per element there (a factor that underflows to zero stands for a gate under e^-87); inside the
// diagonal block, element by element (there c - gam_j can be positive).
template <bool IsQ, int RB, int BV, int Kern>
__device__ __forceinline__ void product_store(int lane, uint8_t* smem, int buf, float scale, const RowBlockAcc<RB>& acc) {
  constexpr SmemLayout L(BV, Kern);
  constexpr int kTiles = 2 * (RB + 1);
  const int g = lane >> 2, t = lane & 3;
  const float* beta = scalar_vec<BV, Kern>(smem, buf, kBeta);
  const float* gam = scalar_vec<BV, Kern>(smem, buf, kGam);
  const float* rk = scalar_vec<BV, Kern>(smem, buf, kRk);
  const float* rq = scalar_vec<BV, Kern>(smem, buf, kRq);
  // L's diagonal 16 x 16 block in fp32 for the eliminations, the rest of the row block in f16.
  [[maybe_unused]] float* diag = diagonal_block(smem + L.lt, RB);
  uint32_t pairs[kTiles][2];  // packed f16 pairs, (n-tile, row half)
  // Every scalar this lane needs, loaded before the first store (the compiler cannot move a load
  // above a store to shared memory): the column pairs' rk and gam, shared by both row halves.
  float2 rj[kTiles], gj[kTiles];
  float si[2], gi[2];
#pragma unroll
  for (int nt = 0; nt < kTiles; ++nt) {
    rj[nt] = *reinterpret_cast<const float2*>(rk + 8 * nt + 2 * t);
    gj[nt] = *reinterpret_cast<const float2*>(gam + 8 * nt + 2 * t);
  }
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const int i = 16 * RB + g + 8 * hr;
    si[hr] = IsQ ? scale * rq[i] : beta[i] * rk[i];
    gi[hr] = gam[i];
  }
  // Tile nt lies left of the row block's diagonal 16 x 16 block: every j < i there.
  auto left_of_diagonal = [](int nt) { return nt / 2 < RB; };
  const float c = gam[16 * RB];
  float row_factor[2];
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) row_factor[hr] = si[hr] * exp_nonpos(gi[hr] - c);
#pragma unroll
  for (int nt = 0; nt < kTiles; ++nt) {
    if (left_of_diagonal(nt)) {  // factored
      rj[nt].x *= exp_nonpos(c - gj[nt].x);
      rj[nt].y *= exp_nonpos(c - gj[nt].y);
    }
  }
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const int i = 16 * RB + g + 8 * hr;
#pragma unroll
    for (int nt = 0; nt < kTiles; ++nt) {
      const int j = 8 * nt + 2 * t;
      const float x0 = acc[nt][2 * hr], x1 = acc[nt][2 * hr + 1];
      const bool left = left_of_diagonal(nt);
      const float v0 = left ? row_factor[hr] * rj[nt].x * x0 : si[hr] * rj[nt].x * exp_nonpos(gi[hr] - gj[nt].x) * x0;
      const float v1 = left ? row_factor[hr] * rj[nt].y * x1 : si[hr] * rj[nt].y * exp_nonpos(gi[hr] - gj[nt].y) * x1;
      if constexpr (!IsQ) {
        if (left) pairs[nt][hr] = pack_f16x2(v0, v1);
        else *reinterpret_cast<float2*>(diag + (i - 16 * RB) * kDiagStride + j - 16 * RB) = make_float2(j < i ? v0 : 0.f, j + 1 < i ? v1 : 0.f);
      } else {
        pairs[nt][hr] = pack_f16x2(left || j <= i ? v0 : 0.f, left || j + 1 <= i ? v1 : 0.f);
      }
    }
  }
  // The f16 pairs by stmatrix, one per pair of n-tiles: matrix m of pair np is rows 8 (m % 2) .. of
  // n-tile 2 np + m / 2, and lane l addresses row l % 8 of matrix l / 8. P_g: the whole row block,
  // zeros above the diagonal (wgmma multiplies by the whole tile; the mma.sync scan skips them).
  // L: the pairs left of the diagonal block, into lt's f16 tile.
  const int m = lane >> 3, row = 16 * RB + 8 * (m & 1) + (lane & 7);
  const uint32_t to = smem_u32(smem) + (IsQ ? L.pg(buf) : L.lt);
#pragma unroll
  for (int np = 0; np < (IsQ ? 4 : RB); ++np) {
    uint32_t r[4] = {0u, 0u, 0u, 0u};
    if (np <= RB) r[0] = pairs[2 * np][0], r[1] = pairs[2 * np][1], r[2] = pairs[2 * np + 1][0], r[3] = pairs[2 * np + 1][1];
    ptx::stmatrix_x4(to + swizzle128(row, 8 * (2 * np + (m >> 1))), r);
  }
}

// Four warps share the eight tasks two each (K3 + K0, Q3 + Q0, K2 + K1, Q2 + Q1: 5 n-tile pairs
// per warp), and a warp's two accumulators are one array of ten tiles, so its products can stay in
// registers while the stores run once per value head that shares the q/k head (the products depend
// on q and k only, their scaled stores on the head's gates), with one copy of the loop's code.
using HeldProducts = float[10][4];
template <int RA> __device__ __forceinline__ RowBlockAcc<RA>& first_task(HeldProducts& h) {
  return *reinterpret_cast<RowBlockAcc<RA>*>(&h[0]);
}
template <int RA> __device__ __forceinline__ RowBlockAcc<3 - RA>& second_task(HeldProducts& h) {
  return *reinterpret_cast<RowBlockAcc<3 - RA>*>(&h[2 * RA + 2]);
}

// One task: the Q K^T (Q true) or K K^T rows of row block R.
template <bool Q, int R> struct ProductTask {
  static constexpr bool kQ = Q;
  static constexpr int kRB = R;
};

// f(task, accumulator) for each of this warp's two tasks (four warps), in order.
template <class F> __device__ __forceinline__ void each_held_task(int warp, HeldProducts& held, F&& f) {
  switch (warp) {
    case 0: f(ProductTask<false, 3>{}, first_task<3>(held)), f(ProductTask<false, 0>{}, second_task<3>(held)); break;
    case 1: f(ProductTask<true, 3>{}, first_task<3>(held)), f(ProductTask<true, 0>{}, second_task<3>(held)); break;
    case 2: f(ProductTask<false, 2>{}, first_task<2>(held)), f(ProductTask<false, 1>{}, second_task<2>(held)); break;
    default: f(ProductTask<true, 2>{}, first_task<2>(held)), f(ProductTask<true, 1>{}, second_task<2>(held)); break;
  }
}

// This warp's two products into `held` (four warps). No barrier.
template <int BV, int Kern, class Grp>
__device__ __forceinline__ void products_mma(const Grp& grp, uint8_t* smem, int stage, HeldProducts& held) {
  static_assert(Grp::kWarps == 4, "four warps, two tasks each");
  const int lane = grp.tid & 31;
  each_held_task(grp.warp(), held, [&](auto task, auto& acc) {
    product_mma<decltype(task)::kQ, decltype(task)::kRB, BV, Kern>(lane, smem, stage, acc);
  });
}

// This warp's two stores (L into lt, P_g into pg of buffer `buf`) from `held`. No barrier.
template <int BV, int Kern, class Grp>
__device__ __forceinline__ void products_store(const Grp& grp, uint8_t* smem, int buf, float scale, HeldProducts& held) {
  const int lane = grp.tid & 31;
  each_held_task(grp.warp(), held, [&](auto task, auto& acc) {
    product_store<decltype(task)::kQ, decltype(task)::kRB, BV, Kern>(lane, smem, buf, scale, acc);
  });
}

// L into lt and P_g into pg of buffer `buf` on mma.sync, by four warps: eight 16-row tasks (K K^T
// and Q K^T row blocks rb = 0..3), only the n-tiles on or below the diagonal. Row block rb costs
// rb + 1 n-tile pairs; each warp takes two tasks (products_mma). Contains a group barrier between
// the products and the stores (the q/k tiles are dead after it: the preparation kernel's layout
// puts L and P_g over them); ends without one.
template <class In, int BV, int Kern, class Grp>
__device__ __forceinline__ void chunk_products(const Grp& grp, uint8_t* smem, int stage, int buf, float scale) {
  HeldProducts held;
  products_mma<BV, Kern>(grp, smem, stage, held);
  grp.sync();
  products_store<BV, Kern>(grp, smem, buf, scale, held);
}

// X K^T of chunk `stage` as one m64n64 wgmma product over the head dim's 8 k-steps, X the q or k
// tile at a_tile (both operands the stage's f16 tiles, K-major), issued and committed as one group:
// warp w's accumulator is row block w, the m16n8 tiles of product_mma side by side. The same
// k-steps in the same order as mma.sync, so the same bits (GPU test FusedGivesTwoPassBits).
template <int BV, int Kern>
__device__ __forceinline__ void issue_product_wgmma(float (&acc)[8][4], uint8_t* smem, int stage, bool is_q) {
  constexpr SmemLayout L(BV, Kern);
  const uint32_t s0 = smem_u32(smem), k_at = s0 + L.k(stage), a_at = s0 + (is_q ? L.q(stage) : L.k(stage));
  auto k_major = [](uint32_t at) { return ptx::wgmma_smem_desc_sw128(at, 16, 1024); };
  auto step = [](uint32_t tile, int kk) { return tile + half_of(kk) + 32u * uint32_t(kk & 3); };
  float(&d)[32] = *reinterpret_cast<float(*)[32]>(&acc[0][0]);
  ptx::wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < kHeadDim / 16; ++kk) ptx::wgmma_m64n64k16_f32_f16_ss(d, k_major(step(a_at, kk)), k_major(step(k_at, kk)), kk > 0);
  ptx::wgmma_commit_group();
}

// Waits for every committed wgmma group of this thread; acc is then readable.
__device__ __forceinline__ void await_product_wgmma(float (&acc)[8][4]) {
  ptx::wgmma_wait_group<0>();
  ptx::wgmma_fence_operands(*reinterpret_cast<float(*)[32]>(&acc[0][0]));
}

// Warp w's row block w of L (IsQ false) or P_g (IsQ true) from its wgmma accumulator, scaled and
// stored by product_store. No barrier.
template <bool IsQ, int BV, int Kern, class Grp>
__device__ __forceinline__ void store_row_block(const Grp& grp, uint8_t* smem, int buf, float scale, float (&acc)[8][4]) {
  static_assert(Grp::kWarps == 4, "one warpgroup");
  const int lane = grp.tid & 31;
  switch (grp.warp()) {
    case 0: product_store<IsQ, 0, BV, Kern>(lane, smem, buf, scale, *reinterpret_cast<RowBlockAcc<0>*>(&acc[0][0])); break;
    case 1: product_store<IsQ, 1, BV, Kern>(lane, smem, buf, scale, *reinterpret_cast<RowBlockAcc<1>*>(&acc[0][0])); break;
    case 2: product_store<IsQ, 2, BV, Kern>(lane, smem, buf, scale, *reinterpret_cast<RowBlockAcc<2>*>(&acc[0][0])); break;
    default: product_store<IsQ, 3, BV, Kern>(lane, smem, buf, scale, *reinterpret_cast<RowBlockAcc<3>*>(&acc[0][0])); break;
  }
}

// Four consecutive floats of shared memory (16-byte aligned: kDiagStride is a multiple of 4, and so
// are the column offsets read this way).
__device__ __forceinline__ float4 ld4(const float* p) { return *reinterpret_cast<const float4*>(p); }

// The diagonal 16 x 16 block (row stride kDiagStride, fp32) inverted in place by one warp: its two
// 8 x 8 diagonal blocks by elimination in registers (lane r of an 8-lane group holds row r; step s
// adds -L_rs times row s, shuffled, to rows r > s: seven dependent steps, fp32), then the 8 -> 16
// merge T_10 = -T_11 (L_10 T_00) as two m16n8k16 on f16 operands padded with zeros, transposed so
// that the first product's accumulator is the second's A operand: M^T = T_00^T L_10^T, then
// T_10^T = -M^T T_11^T. Lanes 16-31 shadow lanes 0-15 in the eliminations. No barrier but the warp's.
__device__ __forceinline__ void invert_diagonal_hier(float* blk, int lane) {
  const int sub = (lane >> 3) & 1, r = lane & 7;
  float* row = blk + (8 * sub + r) * kDiagStride + 8 * sub;
  const float4 lo = ld4(row), hi = ld4(row + 4);
  const float l[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  float x[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) x[j] = j == r ? 1.f : j < r ? l[j] : 0.f;
#pragma unroll
  for (int step = 0; step < 7; ++step) {
    const float scale = -x[step];  // -L_r,step: row r's entry, untouched by earlier steps
#pragma unroll
    for (int i = 0; i < step; ++i) {
      const float from = __shfl_sync(0xffffffffu, x[i], step, 8);  // T_step,i, final
      if (r > step) x[i] = fmaf(scale, from, x[i]);
    }
    if (r > step) x[step] = scale;
  }
  __syncwarp();
  if (lane < 16) {
    *reinterpret_cast<float4*>(row) = make_float4(x[0], x[1], x[2], x[3]);
    *reinterpret_cast<float4*>(row + 4) = make_float4(x[4], x[5], x[6], x[7]);
  }
  __syncwarp();
  const int g = lane >> 2, t = lane & 3;
  const float* t00 = blk;
  const float* l10 = blk + 8 * kDiagStride;
  const float* t11 = blk + 8 * kDiagStride + 8;
  // M^T (8 x 8) = T_00^T L_10^T: A(m, k) = T_00(k, m), B(k, n) = L_10(n, k); rows and k past 8 zero.
  const uint32_t a_t00[4] = {pack_f16x2(t00[2 * t * kDiagStride + g], t00[(2 * t + 1) * kDiagStride + g]), 0u, 0u, 0u};
  const float2 b_l10 = *reinterpret_cast<const float2*>(l10 + g * kDiagStride + 2 * t);
  float mt[4] = {0.f, 0.f, 0.f, 0.f};
  mma(mt, a_t00, pack_f16x2(b_l10.x, b_l10.y), 0u);
  // T_10^T = -(M^T) T_11^T: A = M^T (the accumulator's rows g, columns 2t, 2t + 1; rows g + 8 are
  // zero), B(k, n) = T_11(n, k).
  const uint32_t a_mt[4] = {pack_f16x2(mt[0], mt[1]), 0u, 0u, 0u};
  const float2 b_t11 = *reinterpret_cast<const float2*>(t11 + g * kDiagStride + 2 * t);
  float tt[4] = {0.f, 0.f, 0.f, 0.f};
  mma(tt, a_mt, pack_f16x2(b_t11.x, b_t11.y), 0u);
  float* t10 = blk + 8 * kDiagStride;
  t10[2 * t * kDiagStride + g] = -tt[0];
  t10[(2 * t + 1) * kDiagStride + g] = -tt[1];
}

// The merges' operands come from lt's f16 tile (`lh`, 64 x 64 in the 128-byte swizzle) by
// ldmatrix: L's blocks left of the diagonal (product_store), each T_ii (store_ag_diagonal) and T_10,
// T_32 (in the scratch blocks (0, 1), (2, 3) above the diagonal). Each is the f16 rounding of the
// fp32 value the merge would otherwise read and round itself: the same operands.

// B fragment (k16 x n8) of the 8 columns 16 cb + 8 h of lh's block (rb, cb), k its rows.
__device__ __forceinline__ void lh_b(uint32_t (&b)[2], uint32_t lh, int rb, int cb, int h, int lane) {
  ldmatrix_x2_trans(b, lh + swizzle128(16 * rb + (lane & 15), 16 * cb + 8 * h));
}

// acc (a 16 x 8 accumulator tile) += A B, A lh's 16 x 16 block (ra, ca), B a fragment (lh_b or
// acc_to_b), as one m16n8k16: f16 operands, fp32 accumulation. The host model keeps every stress
// input inside the precision budget and within 10 % of the error of exact merges
// (tests/cpu/test_prefill_sm90_numerics.cpp).
__device__ __forceinline__ void lh_product(float (&acc)[4], uint32_t lh, int ra, int ca, const uint32_t (&b)[2], int lane) {
  const RowCol at = a_rows(lane, 16 * ra, 16 * ca);
  uint32_t af[4];
  ptx::ldmatrix_x4(af, lh + swizzle128(at.row, at.col));
  mma(acc, af, b[0], b[1]);
}

// sign * acc (a 16 x 8 accumulator tile) into lh at rows r0, columns c0, as f16.
__device__ __forceinline__ void store_tile_f16(uint8_t* lh, int r0, int c0, const float (&acc)[4], float sign, int lane) {
  const int g = lane >> 2, j = c0 + 2 * (lane & 3);
  *reinterpret_cast<uint32_t*>(lh + swizzle128(r0 + g, j)) = pack_f16x2(sign * acc[0], sign * acc[1]);
  *reinterpret_cast<uint32_t*>(lh + swizzle128(r0 + g + 8, j)) = pack_f16x2(sign * acc[2], sign * acc[3]);
}

// A_g = (I + Gam * L)^-1 * diag(beta), f16 in the 128-byte swizzle, is written as the inverse makes
// each block of it final, from the fp32 values the inverse holds or stores (so bit for bit what a
// pass over an fp32 inverse would give): the inverse of the gated L (product_store) is Gam * A_r.

// sign * acc, the 16 x 8 tile of the inverse at rows r0 and columns c0 (left of the diagonal
// blocks), times beta's columns into A_g at ag.
__device__ __forceinline__ void store_ag_tile(uint8_t* ag, const float* beta, int r0, int c0, const float (&acc)[4], float sign,
                                              int lane) {
  const int g = lane >> 2, j = c0 + 2 * (lane & 3);
  const float2 bj = *reinterpret_cast<const float2*>(beta + j);
  *reinterpret_cast<uint32_t*>(ag + swizzle128(r0 + g, j)) = pack_f16x2(sign * acc[0] * bj.x, sign * acc[1] * bj.y);
  *reinterpret_cast<uint32_t*>(ag + swizzle128(r0 + g + 8, j)) = pack_f16x2(sign * acc[2] * bj.x, sign * acc[3] * bj.y);
}

// Once diagonal block w is inverted (blk, fp32): row block w of A_g (that block times beta's
// columns, zero above the diagonal, and zeros right of it) and T_ww into lh in f16. Lane (r, h) =
// (l / 2, l % 2) takes row 16 w + r, eight columns at a time. One warp; its stores to blk are
// visible to it (__syncwarp).
__device__ __forceinline__ void store_ag_diagonal(uint8_t* ag, uint8_t* lh, const float* beta, const float* blk, int w, int lane) {
  const int h = lane & 1, i = 16 * w + (lane >> 1), j0 = 16 * w + 8 * h;
  const float* row = blk + (lane >> 1) * kDiagStride + 8 * h;
  const float4 t_lo = ld4(row), t_hi = ld4(row + 4);
  const float4 b_lo = ld4(beta + j0), b_hi = ld4(beta + j0 + 4);
  const float t[8] = {t_lo.x, t_lo.y, t_lo.z, t_lo.w, t_hi.x, t_hi.y, t_hi.z, t_hi.w};
  const float b[8] = {b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w};
  uint32_t p[4], q[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int j = j0 + 2 * k;  // above the diagonal the block holds zeros: selected away all the same
    p[k] = pack_f16x2(j <= i ? t[2 * k] * b[2 * k] : 0.f, j + 1 <= i ? t[2 * k + 1] * b[2 * k + 1] : 0.f);
    q[k] = pack_f16x2(t[2 * k], t[2 * k + 1]);
  }
  *reinterpret_cast<uint4*>(ag + swizzle128(i, j0)) = make_uint4(p[0], p[1], p[2], p[3]);
  *reinterpret_cast<uint4*>(lh + swizzle128(i, j0)) = make_uint4(q[0], q[1], q[2], q[3]);
  for (int c = 2 * w + 2 + h; c < 8; c += 2) *reinterpret_cast<uint4*>(ag + swizzle128(i, 8 * c)) = make_uint4(0u, 0u, 0u, 0u);
}

// Diagonal block w of lt inverted (invert_diagonal_hier), then row block w of A_g and T_ww in lh
// from it. One warp.
__device__ __forceinline__ void invert_diagonal_block(uint8_t* lt, uint8_t* ag, const float* beta, int w, int lane) {
  float* blk = diagonal_block(lt, w);
  invert_diagonal_hier(blk, lane);
  __syncwarp();
  store_ag_diagonal(ag, lt, beta, blk, w, lane);
}

// (I + L)^-1 and A_g into ag of buffer `buf`, from L in lt (the blocks left of the diagonal in lh,
// f16; the diagonal 16 x 16 blocks in fp32, strictly lower). Needs four warps or more (the first
// four work). Ends without a barrier.
//   1. The diagonal 16 x 16 blocks T_ii = (I + L_ii)^-1, one warp each (invert_diagonal_block),
//      unless kDiagonalsDone (the fused preparation inverts them under Q K^T).
//   2. The 32 x 32 halves: T_10 = -T_11 (L_10 T_00) and T_32 = -T_33 (L_32 T_22).
//   3. The lower-left quarter: T_[23][01] = -T_[23][23] (L_[23][01] T_[01][01]).
// Each product on tensor cores (lh_product, f16 operands); a warp's task is the 8-column half h of
// an output block column, and the product in parentheses stays in its registers as the next
// product's B operand (acc_to_b: the f16 values a round trip through shared memory would give). Two
// barriers after the diagonal blocks.
template <bool kDiagonalsDone, int BV, int Kern, class Grp>
__device__ __forceinline__ void invert_into_ag(const Grp& grp, uint8_t* smem, int buf) {
  static_assert(Grp::kWarps >= 4, "one warp per diagonal block");
  constexpr SmemLayout L(BV, Kern);
  uint8_t* lt = smem + L.lt;
  const uint32_t lh = smem_u32(lt);
  uint8_t* ag = smem + L.ag(buf);
  const float* beta = scalar_vec<BV, Kern>(smem, buf, kBeta);
  const int tid = grp.tid, warp = tid >> 5, lane = tid & 31;
  if constexpr (!kDiagonalsDone) {
    if (warp < 4) invert_diagonal_block(lt, ag, beta, warp, lane);
    grp.sync();
  }
  const int h = warp & 1, b = (warp >> 1) & 1;
  // The halves: warp (b, h) takes pair b (rows 2b + 1, columns 2b), column half h, into scratch
  // block (2b, 2b + 1): L_(2b+1,2b) is read by both halves' warps, so T does not go over it.
  if (warp < 4) {
    float m[4] = {0.f, 0.f, 0.f, 0.f}, t[4] = {0.f, 0.f, 0.f, 0.f};
    uint32_t tb[2], mb[2];
    lh_b(tb, lh, 2 * b, 2 * b, h, lane);
    lh_product(m, lh, 2 * b + 1, 2 * b, tb, lane);
    acc_to_b(m, mb);
    lh_product(t, lh, 2 * b + 1, 2 * b + 1, mb, lane);
    store_tile_f16(lt, 32 * b, 16 * (2 * b + 1) + 8 * h, t, -1.f, lane);
    store_ag_tile(ag, beta, 16 * (2 * b + 1), 32 * b + 8 * h, t, -1.f, lane);
  }
  grp.sync();
  // The quarter: warp (c, h) takes block column c, half h, both rows. M_2c and M_3c = L_[23][01]
  // T_[01]c (M_r0 = L_r0 T_00 + L_r1 T_10, M_r1 = L_r1 T_11), then T_2c = -T_22 M_2c and
  // T_3c = -(T_32 M_2c + T_33 M_3c). T_10 and T_32 are in the scratch blocks (0, 1) and (2, 3).
  if (warp < 4) {
    const int c = b;
    float m2[4] = {0.f, 0.f, 0.f, 0.f}, m3[4] = {0.f, 0.f, 0.f, 0.f};
    uint32_t t0c[2];
    if (c == 0) {
      uint32_t t10[2];
      lh_b(t0c, lh, 0, 0, h, lane);
      lh_b(t10, lh, 0, 1, h, lane);
      lh_product(m2, lh, 2, 0, t0c, lane);
      lh_product(m3, lh, 3, 0, t0c, lane);
      lh_product(m2, lh, 2, 1, t10, lane);
      lh_product(m3, lh, 3, 1, t10, lane);
    } else {
      lh_b(t0c, lh, 1, 1, h, lane);
      lh_product(m2, lh, 2, 1, t0c, lane);
      lh_product(m3, lh, 3, 1, t0c, lane);
    }
    uint32_t b2[2], b3[2];
    acc_to_b(m2, b2);
    acc_to_b(m3, b3);
    float t2[4] = {0.f, 0.f, 0.f, 0.f}, t3[4] = {0.f, 0.f, 0.f, 0.f};
    lh_product(t2, lh, 2, 2, b2, lane);
    lh_product(t3, lh, 2, 3, b2, lane);
    lh_product(t3, lh, 3, 3, b3, lane);
    store_ag_tile(ag, beta, 32, 16 * c + 8 * h, t2, -1.f, lane);
    store_ag_tile(ag, beta, 48, 16 * c + 8 * h, t3, -1.f, lane);
  }
}

// L into lt and P_g into pg of buffer `buf` on wgmma, for a preparation that is one whole
// warpgroup (the fused kernel), K K^T already issued into kt (before the scalars, which it does
// not need): each product stored by its row blocks (the tiles above the diagonal are computed and
// dropped). While Q K^T runs, warp w inverts diagonal block w of lt, which its own L stores wrote,
// and writes row block w of A_g from it. The q/k tiles were rewritten and fenced by the warps
// that normed them before the group learnt of it (the fused kernel's producer, before `normed`),
// and chunk_scalars' closing barrier orders the scalars before the stores read them. Ends
// without a barrier.
template <int BV, int Kern, class Grp>
__device__ __forceinline__ void chunk_products_wgmma(const Grp& grp, uint8_t* smem, int stage, int buf, float scale,
                                                     float (&kt)[8][4]) {
  constexpr SmemLayout L(BV, Kern);
  float qt[8][4];
  await_product_wgmma(kt);
  store_row_block<false, BV, Kern>(grp, smem, buf, scale, kt);
  issue_product_wgmma<BV, Kern>(qt, smem, stage, true);
  __syncwarp();
  invert_diagonal_block(smem + L.lt, smem + L.ag(buf), scalar_vec<BV, Kern>(smem, buf, kBeta), grp.warp(), grp.tid & 31);
  await_product_wgmma(qt);
  store_row_block<true, BV, Kern>(grp, smem, buf, scale, qt);
}

// The whole preparation of chunk `stage` (its copies landed and visible to the group) into buffer
// `buf`: scalars, K K^T and Q K^T (on wgmma in the fused kernel: K K^T issued first, under the
// scalars, and the diagonal blocks of the inverse under Q K^T; else mma.sync), the inverse and
// A_g. Ends without a barrier. kNorms false: chunk_norms has run on the chunk already (by other
// warps, whose writes are visible to the group; the fused kernel's only form).
template <class In, int BV, int Kern, bool kNorms = true, class Grp>
__device__ __forceinline__ void prepare_chunk(const Grp& grp, uint8_t* smem, int stage, int buf, const dev::GateIn& gate,
                                              const prefill::Args& a, int rows) {
  constexpr bool kWgmma = Kern == kFusedKernel;
  static_assert(!(kWgmma && kNorms), "the fused kernel's producer norms the tiles");
  if constexpr (kWgmma) {
    float kt[8][4];
    issue_product_wgmma<BV, Kern>(kt, smem, stage, false);
    chunk_scalars<In, BV, Kern, kNorms>(grp, smem, stage, buf, gate, a, rows);
    chunk_products_wgmma<BV, Kern>(grp, smem, stage, buf, a.scale, kt);
  } else {
    chunk_scalars<In, BV, Kern, kNorms>(grp, smem, stage, buf, gate, a, rows);
    chunk_products<In, BV, Kern>(grp, smem, stage, buf, a.scale);
  }
  grp.sync();
  invert_into_ag<kWgmma, BV, Kern>(grp, smem, buf);
}

}  // namespace gdn::sm90

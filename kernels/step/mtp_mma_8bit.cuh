// The tensor-core chunk kernel (mtp_mma.cuh) for 8-bit pools (docs/state-8bit.md), update calls
// without the cache: the fp32 pool's build of apply_staged on a register tile widened from codes.
// step_vk_8bit_kernel (the CUDA-core token loop) spends three FMAs per state value and token, as
// the bf16 pool's; here a chunk of up to 8 tokens costs about one pass over the tile (two small
// GEMMs, a scalar recurrence per row, an update GEMM), so the call's time follows its bytes.
//
// Tile: mma_vk::Tile<float> (16 rows x 128 K per warp, lane (g, t) holding k-step s's physical
// columns 16 s + 4 t .. + 3 of rows g and g + 8), so one 32-bit word of codes per k-step and row:
// 16 word loads per lane, each instruction reading 16 contiguous bytes of 8 rows, and the
// physical K order of the fp32 build (the staged k, q and every MMA operand unchanged).
// Load: the code values (exact in bf16) and the rows' scales (ScaledTile). The first chunk's dots
// are then exact bf16 MMAs on the codes, scaled per row afterwards (no split of the state into
// two bf16 halves: half the dot MMAs and no split arithmetic), and its update starts from
// (a_C scale) codes; from then on the tile holds the state in fp32, as the fp32 pool's build.
// Store: the host quantizer's steps (core/state_quant.h): absmax over the row (32 values per
// lane, then a max over the quad's 4 lanes), the row's scale and inverse r (core/row_scale.h:
// fp8's power of two, int8's IEEE quotients), codes RNE(x r) saturated (Fp8Codes / Int8Codes of
// decode_8bit.cuh).
// A separate template, so the fp32 and bf16 builds of step_vk_mma_kernel are untouched.
#pragma once

#include "step/decode_8bit.cuh"
#include "step/mtp_mma.cuh"

namespace gdn::step {
namespace mma_vk {

template <class Q> struct CodeTile : ScaledTile {
  static_assert(Tile<float>::KPG == 1, "one 4-value fp32 chunk per k-step and lane");

  // codes, scales: the warp's first row (row0) of the slot.
  template <class M> __device__ void load_codes(const uint8_t* codes, const float* scales, int g, int t) {
    uint32_t raw[2][kSteps];
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int j = 0; j < kSteps; ++j) raw[r][j] = M::load4(codes + (g + 8 * r) * kHeadK + ph<1>(t, j, 0));
    row_scale[0] = scales[g], row_scale[1] = scales[g + 8];
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int j = 0; j < kSteps; ++j) {
        float x[4];
        Q::values4(raw[r][j], x);
#pragma unroll
        for (int e = 0; e < 4; ++e) s[ntile(j, e)][reg(e, r)] = x[e];
      }
  }

  template <class M> __device__ void store_codes(uint8_t* codes, float* scales, int g, int t) const {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float m = 0.f;
#pragma unroll
      for (int n = 0; n < 2 * kSteps; ++n) m = fmaxf(m, fmaxf(fabsf(s[n][2 * r]), fabsf(s[n][2 * r + 1])));
      const float amax = max_lanes<1, 4>(m);  // the row's 4 lanes: one quad
      const float inv = Q::row_scale(amax).inv;
      float x[4 * kSteps];
#pragma unroll
      for (int j = 0; j < kSteps; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) x[4 * j + e] = s[ntile(j, e)][reg(e, r)];
      uint32_t w[kSteps];
      Q::template narrow_words<kSteps>(x, inv, w);
#pragma unroll
      for (int j = 0; j < kSteps; ++j) M::store4(codes + (g + 8 * r) * kHeadK + ph<1>(t, j, 0), w[j]);
      if (t == 0) scales[g + 8 * r] = Q::row_scale(amax).scale;
    }
  }
};

// apply_staged for a CodeTile: the call's first chunk in the CODES form, every later one on
// the fp32 state it leaves.
template <class Q>
__device__ __forceinline__ void apply_staged_codes(CodeTile<Q>& tile, const decode::Args& a, const WarpTask& w,
                                                   int row0, const TokenStage& st, const WarpGates& gates, int t0,
                                                   int n, int lane) {
  for (int c0 = 0; c0 < n; c0 += kChunk) {
    const int C = n - c0 < kChunk ? n - c0 : kChunk;
    auto chunk = [&](auto codes) {
      constexpr bool F = decltype(codes)::value;  // CODES implies EXACT (the codes are exact in bf16)
      if (C == kChunk) apply_chunk<float, 2, F, true, true, true, false, F>(tile, a, w, row0, st, gates, c0, t0 + c0, C, lane);
      else if (C > 4) apply_chunk<float, 2, F, true, false, true, false, F>(tile, a, w, row0, st, gates, c0, t0 + c0, C, lane);
      else apply_chunk<float, 1, F, true, false, true, false, F>(tile, a, w, row0, st, gates, c0, t0 + c0, C, lane);
    };
    if (t0 == 0 && c0 == 0) chunk(std::true_type{});
    else chunk(std::false_type{});
  }
}

}  // namespace mma_vk

// K = 128, V % 16 == 0, bf16 q/k/v, 8-bit pool (codes and per-row scales), T in 1..64, no cache,
// no rollback. Grid and registers as step_vk_mma_kernel's (one warp per (row, value head, 16
// rows)); a call with update_state off runs the same loop and skips the store.
template <class Q, class M = InPlaceMem, int MINW = kMmaMinWarps>
__global__ void __launch_bounds__(32, MINW) step_vk_mma_8bit_kernel(const decode::Args a) {
  using namespace mma_vk;
  extern __shared__ uint4 smem_raw[];
  const int lane = threadIdx.x & 31;
  WarpTask w;
  if (!warp_task<1>(a, a.V / kRows, w)) return;
  const int row0 = w.tile * kRows;
  const int TC = a.T < kStageTokens ? a.T : kStageTokens;
  const TokenStage st(smem_raw, TC);
  st.start(a, w.b, w.hk, w.h, row0, 0, TC, lane);

  if (w.slot < 0) {
    __pipeline_wait_prior(0);
    zero_o(a, w, row0, lane);
    return;
  }

  // The tile's first row (64-bit), at the load and again at the store from a reloaded slot: kept
  // live across the chunks it was spilled with the code and scale pointers (sm_90: 28 + 52 bytes
  // of spill, 8 + 24 this way, outside the chunk math).
  auto first_row = [&](int64_t slot) { return (slot * a.HV + w.h) * int64_t(a.V) + row0; };
  CodeTile<Q> tile;
  {
    const int64_t rows = first_row(w.slot);
    tile.template load_codes<M>(static_cast<const uint8_t*>(a.pool) + rows * kHeadK, a.pool_scale + rows, lane >> 2,
                                lane & 3);
  }
  const WarpGates gates = load_gates(a, w.b, w.h, lane);

  for_each_stage(a, w, row0, st, TC, lane,
                 [&](int t0, int n) { apply_staged_codes(tile, a, w, row0, st, gates, t0, n, lane); });
  if (a.update_state) {
    const int64_t rows = first_row(slot_of(a, w.b));
    tile.template store_codes<M>(static_cast<uint8_t*>(a.pool) + rows * kHeadK, a.pool_scale + rows, lane >> 2, lane & 3);
  }
}

}  // namespace gdn::step

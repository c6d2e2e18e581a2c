// The read-only mtp call (update_state off, no intermediate cache, T <= kGramTokens): only o is
// written, so no state after any token is needed. Each state row takes its dots with every token
// from the starting state s (independent: no token waits for the previous one's update), and the
// tokens' corrections come from the tokens' Gram table in a T x T scalar recurrence:
//   s_{t-1}.k_t = G_t (s.k_t) + sum_{r<t} (G_t / G_r) d_r (k_r.k_t),  d_t = beta_t (v_t - that),
//   o_t = G_t (s.q_t) + sum_{r<=t} (G_t / G_r) d_r (k_r.q_t),  G_t the product of decays 1..t.
// Two thirds of the multiply-adds of VkTile::tokens and none of its per-token chain. Without the
// write half the call is bound by instructions rather than bytes, so a warp reads TILES tiles of
// one (row, value head) one after the other and stages the tokens, their norms and the Gram
// table once for all of them (kernels/step/README.md: 197 -> 146 us at T = 4 B = 256). From 5
// tokens on the tensor-core kernels take read-only calls, without their state update
// (step/plan.cpp: uses_mma, read_only_call).
#pragma once

#include <type_traits>

#include "step/kernel.cuh"

namespace gdn::step {

// The Gram table for n <= kGramTokens staged tokens (fp32 k^ and q^ of a finished Stage):
// k_r.k_t (r < t) at gram[t * kGramTokens + r] and k_r.q_t (r <= t) at gram[r * kGramTokens + t];
// entries of absent tokens are 0. Each lane multiplies its 4 of the K values of every pair, one
// transposing butterfly sums all 16 products.
constexpr int kGramBytes = kGramTokens * kGramTokens * 4;
__device__ __forceinline__ void stage_gram(const Stage& st, int n, float* gram, int lane) {
  float k[kGramTokens][4], q[kGramTokens][4];
#pragma unroll
  for (int t = 0; t < kGramTokens; ++t) {
    if (t < n) {
      load_f32<4>(st.k32(t) + lane * 4, k[t]);
      load_f32<4>(st.q32(t) + lane * 4, q[t]);
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) k[t][e] = q[t][e] = 0.f;
    }
  }
  float x[kGramTokens * kGramTokens];
#pragma unroll
  for (int p = 0; p < kGramTokens * kGramTokens; ++p) {
    const int r = p % kGramTokens, t = p / kGramTokens;
    const float* u = r < t ? k[r] : k[t];
    const float* v = r < t ? k[t] : q[r];
    x[p] = 0.f;
#pragma unroll
    for (int e = 0; e < 4; ++e) x[p] = fmaf(u[e], v[e], x[p]);
  }
  const float sum = transpose_sum32x16(x, lane);
  if ((lane & 1) == 0) gram[lane >> 1] = sum;
  __syncwarp();
}

// The dots of the tile's starting state with the n staged tokens (VkTile::dots): mine[t] is this
// lane's row's s.k_t or s.q_t.
template <class TS, int ROWS>
__device__ __forceinline__ void read_only_dots(const VkTile<TS, ROWS>& tile, const Stage& st, int n,
                                               float (&mine)[kGramTokens]) {
#pragma unroll
  for (int j = 0; j < kGramTokens; ++j) {
    if (j >= n) break;
    mine[j] = tile.dots(st, j);
  }
}

// o of the tile's rows for the n tokens, from the dots and the Gram table. v_row0: the tile's
// first row inside the staged v slice.
template <class TS, int ROWS>
__device__ __forceinline__ void read_only_outputs(const VkTile<TS, ROWS>& tile, const decode::Args& a,
                                                  const Stage& st, const float* gram, const WarpGates& gates,
                                                  int64_t b, int h, int n, int v_row0,
                                                  const float (&mine)[kGramTokens]) {
  using T = VkTile<TS, ROWS>;
  constexpr int SH = T::SH;
  const int idx = tile.cl >> SH, row = tile.rg + T::RPI * (idx >> 1);
  const bool is_q = idx & 1;
  uint16_t* const o_row = a.o + (b * a.T * a.HV + h) * a.V + tile.row0 + row;
  const int64_t o_stride = int64_t(a.HV) * a.V;
  const bool writes = is_q && (tile.cl & ((1 << SH) - 1)) == 0;
  float w[kGramTokens];  // (G_t / G_r) d_r
  float G = 1.f;
#pragma unroll
  for (int t = 0; t < kGramTokens; ++t) {
    if (t >= n) break;
    const float other = __shfl_xor_sync(kFull, mine[t], 1 << SH);
    const float pk = is_q ? other : mine[t], pq = is_q ? mine[t] : other;
    const TokenGate g = gates.at(t);
    G *= g.decay;
    float p = G * pk;
#pragma unroll
    for (int r = 0; r < t; ++r) {
      w[r] *= g.decay;
      p = fmaf(w[r], gram[t * kGramTokens + r], p);
    }
    w[t] = g.beta * (st.v_at(t, v_row0 + row) - p);
    float o = G * pq;
#pragma unroll
    for (int r = 0; r <= t; ++r) o = fmaf(w[r], gram[r * kGramTokens + t], o);
    if (writes) o_row[t * o_stride] = f32_to_bf16_bits(o);
  }
}

// One warp per block, TILES tiles of RPW = 4 x ROWS rows per warp (V a multiple of TILES x RPW),
// one staging round. MINW: resident warps per SM to budget registers for.
template <class TS, int ROWS, int TILES, int MINW>
__global__ void __launch_bounds__(32, MINW) step_vk_read_only_kernel(const decode::Args a) {
  using Tile = VkTile<TS, ROWS>;
  constexpr int W = Tile::RPW * TILES;  // rows per warp
  extern __shared__ uint4 smem_raw[];
  const int lane = threadIdx.x & 31;
  WarpTask w;
  if (!warp_task<1>(a, a.V / W, w)) return;
  const int row0 = w.tile * W, n = a.T;
  const Stage st(smem_raw, n, W, true);
  float* const gram = reinterpret_cast<float*>(reinterpret_cast<char*>(smem_raw) + stage_bytes(n, W, true));
  st.start(a, w.b, w.hk, w.h, row0, 0, n, lane);
  const WarpGateIn gate_in = load_gate_inputs<false>(a, w.b, w.h, lane);

  if (w.slot < 0) {  // padding row: zero o, touch no slot
    __pipeline_wait_prior(0);
#pragma unroll 1
    for (int i = 0; i < TILES; ++i) Tile(lane, row0 + i * Tile::RPW).zero_outputs(a, w.b, w.h, lane);
    return;
  }

  const TS* const from = static_cast<const TS*>(a.pool) + head_offset(a, w.slot, w.h);
  // The first tile also finishes the staging and builds the Gram table (peeled: the later tiles'
  // loop then holds nothing of it).
  WarpGates gates;
  auto tile_at = [&](int i, auto first) {
    Tile tile(lane, row0 + i * Tile::RPW);
    uint4 raw[ROWS][Tile::NC];
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int c = 0; c < Tile::NC; ++c) raw[r][c] = InPlaceMem::load16(from + tile.elem(r, c));
    if constexpr (decltype(first)::value) gates = gates_of<false>(a, gate_in, lane);
    tile.widen(raw);
    if constexpr (decltype(first)::value) st.finish(n, a.l2norm, a.scale, lane);
    float mine[kGramTokens];
    read_only_dots(tile, st, n, mine);
    if constexpr (decltype(first)::value) stage_gram(st, n, gram, lane);  // after the dots: the tile's registers are free by then
    read_only_outputs(tile, a, st, gram, gates, w.b, w.h, n, i * Tile::RPW, mine);
  };
  tile_at(0, std::true_type{});
#pragma unroll 1
  for (int i = 1; i < TILES; ++i) tile_at(i, std::false_type{});
}

}  // namespace gdn::step

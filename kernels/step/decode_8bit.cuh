// The single-token vk kernel for 8-bit pools (docs/state-8bit.md): decode_vk_kernel's work split
// (8 lanes per row of K = 128, 4 rows per load instruction, ROWS loads per lane; ROWS = 8 keeps
// 4 KB per warp in flight, as the bf16 tile at depth 4), with one 16-byte load holding a lane's
// 16 codes of a row, all issued before the first use, and one coalesced load of the tile's
// scales (lane cl of row group rg holds row rg + 4 cl's, handed to the row's lanes by shuffle).
// k^ and q^ are staged in fp32 (Stage's f32 form). The row's scale is applied once per row, not
// per element: the dots are scale x (codes . k^), the update one multiply and one multiply-add
// per element from the code value, x' = (decay scale) c + d k^.
// The updated row is stored as codes with a new scale, the host quantizer's steps
// (core/state_quant.h): absmax over the row's 8 lanes (a butterfly max), the row's inverse r and
// scale (core/row_scale.h; the scale once per lane for the whole tile, lane cl computing row
// rg + 4 cl's), codes = RNE(x r) saturated.
// A separate template, so the fp32 and bf16 builds of decode_vk_kernel are untouched.
#pragma once

#include <cuda_fp16.h>

#include "core/row_scale.h"
#include "step/cvt_e4m3.cuh"
#include "step/int8_codes.h"
#include "step/kernel.cuh"

namespace gdn::step {

// fp8 e4m3 codes: 16 per 16-byte chunk, converted two at a time (cvt e4m3x2 <-> f16x2 / f32x2).
struct Fp8Codes {
  // The row's scale and its inverse (core/row_scale.h).
  __device__ static quant::RowScale row_scale(float amax) { return quant::fp8_row_scale(amax); }
  // The 4 code values of a word, unscaled (exact).
  __device__ static void values4(uint32_t w, float* f) {
    const uint32_t a = ptx::e4m3x2_to_f16x2<false>(w), b = ptx::e4m3x2_to_f16x2<true>(w);
    const float2 fa = __half22float2(*reinterpret_cast<const __half2*>(&a));
    const float2 fb = __half22float2(*reinterpret_cast<const __half2*>(&b));
    f[0] = fa.x, f[1] = fa.y, f[2] = fb.x, f[3] = fb.y;
  }
  __device__ static void values(uint4 u, float* f) {
    values4(u.x, f), values4(u.y, f + 4), values4(u.z, f + 8), values4(u.w, f + 12);
  }
  // 4 values -> 4 codes of RNE(x r), saturated (the multiply never fused: __fmul_rn).
  __device__ static uint32_t narrow4(const float* x, float r) {
    return ptx::f32x4_to_e4m3x4(__fmul_rn(x[0], r), __fmul_rn(x[1], r), __fmul_rn(x[2], r), __fmul_rn(x[3], r));
  }
  // N words of codes (4 N values) of one row; cvt's saturation and NaN code are the host's.
  template <int N> __device__ static void narrow_words(const float* x, float r, uint32_t* w) {
#pragma unroll
    for (int i = 0; i < N; ++i) w[i] = narrow4(x + 4 * i, r);
  }
  // 4 codes in a 32-bit word (the T-token kernel's fp32 register layout), scaled.
  __device__ static void widen4(uint32_t w, float scale, float* x) {
    values4(w, x);
#pragma unroll
    for (int i = 0; i < 4; ++i) x[i] = __fmul_rn(x[i], scale);
  }
};

// int8 codes (-127..127): 16 per chunk, by byte permutes and fp32 adds (step/int8_codes.h).
struct Int8Codes {
  __device__ static quant::RowScale row_scale(float amax) { return quant::int8_row_scale(amax); }
  __device__ static void values4(uint32_t w, float* f) {
    const uint32_t flipped = w ^ int8_codes::kFlip;
#pragma unroll
    for (int i = 0; i < 4; ++i) f[i] = int8_codes::widen(flipped, i);
  }
  __device__ static void values(uint4 u, float* f) {
    values4(u.x, f), values4(u.y, f + 4), values4(u.z, f + 8), values4(u.w, f + 12);
  }
  // 4 values -> 4 codes of RNE(x r) for a finite r: |x r| <= 127.5 (int8_codes.h), no clamp.
  __device__ static uint32_t narrow4(const float* x, float r) {
    return int8_codes::pack(int8_codes::round_bias(__fmul_rn(x[0], r)), int8_codes::round_bias(__fmul_rn(x[1], r)),
                            int8_codes::round_bias(__fmul_rn(x[2], r)), int8_codes::round_bias(__fmul_rn(x[3], r)));
  }
  __device__ static uint32_t narrow4_special(const float* x, float r) {
    return int8_codes::pack(int8_codes::round_bias_special(__fmul_rn(x[0], r)),
                            int8_codes::round_bias_special(__fmul_rn(x[1], r)),
                            int8_codes::round_bias_special(__fmul_rn(x[2], r)),
                            int8_codes::round_bias_special(__fmul_rn(x[3], r)));
  }
  // N words of codes (4 N values) of one row. r = inf (absmax < 127 x 2^-128) takes the host's
  // +-127 and 0 for x r = +-inf and NaN: one branch per row, so the common rows carry no clamp.
  template <int N> __device__ static void narrow_words(const float* x, float r, uint32_t* w) {
    if (r > 3.402823466e38f) [[unlikely]] {
#pragma unroll
      for (int i = 0; i < N; ++i) w[i] = narrow4_special(x + 4 * i, r);
    } else {
#pragma unroll
      for (int i = 0; i < N; ++i) w[i] = narrow4(x + 4 * i, r);
    }
  }
  __device__ static void widen4(uint32_t w, float scale, float* x) {
    values4(w, x);
#pragma unroll
    for (int i = 0; i < 4; ++i) x[i] = __fmul_rn(x[i], scale);
  }
};

template <class Q, int ROWS, class M = InPlaceMem, int W = kWarps>
__global__ void __launch_bounds__(W * 32, decode_vk_8bit_min_warps(ROWS) / W)
    decode_vk_8bit_kernel(const decode::Args a) {
  constexpr int LPR = 8, E = 16, RPI = 32 / LPR, RPW = RPI * ROWS;
  static_assert(E * LPR == kHeadK, "a lane holds one 16-byte chunk of codes per row");
  static_assert(ROWS <= LPR, "lane cl of a row group holds row rg + 4 cl's scale");

  extern __shared__ uint4 smem_raw[];
  const int lane = threadIdx.x & 31, cl = lane % LPR, rg = lane / LPR;
  WarpTask w;
  if (!warp_task<W>(a, a.V / RPW, w)) return;
  const int row0 = w.tile * RPW;
  const Stage st(reinterpret_cast<char*>(smem_raw) + (threadIdx.x >> 5) * stage_bytes(1, RPW, true), 1, RPW, true);
  st.start(a, w.b, w.hk, w.h, row0, 0, 1, lane);
  const GateIn gate_in = load_gate(a.gate, w.b, w.h, a.HV);
  uint16_t* o = a.o + (w.b * a.HV + w.h) * a.V + row0;

  if (w.slot < 0) {  // padding row: zero o, touch no slot
    __pipeline_wait_prior(0);
    if (lane < RPW) o[lane] = 0;
    return;
  }

  const int64_t head_rows = (w.slot * a.HV + w.h) * int64_t(a.V);  // 64-bit: first row of the head
  uint8_t* codes = static_cast<uint8_t*>(a.pool) + head_rows * kHeadK;
  float* scales = a.pool_scale + head_rows;
  auto row = [&](int r) { return row0 + rg + RPI * r; };
  uint4 raw[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) raw[r] = M::load16(codes + row(r) * kHeadK + cl * E);
  const bool holds_scale = cl < ROWS;  // lane cl: the scale of row rg + 4 cl
  const float my_scale = holds_scale ? scales[row(cl)] : 0.f;
  const TokenGate g = token_gate(a.gate, gate_in);

  st.finish(1, a.l2norm, a.scale, lane);
  // This lane's 16 values of k^ and q^ (normalised, q^ scaled), staged in fp32: where registers
  // run short, ptxas reloads them per row with 4-value shared loads instead of widening bf16.
  float kf[E], qf[E];
  load_f32<8>(st.k32(0) + cl * E, kf), load_f32<8>(st.k32(0) + cl * E + 8, kf + 8);
  load_f32<8>(st.q32(0) + cl * E, qf), load_f32<8>(st.q32(0) + cl * E + 8, qf + 8);
  const float kq = st.kq(0);  // k^.q^

  float my_amax = 0.f;  // lane cl: the new absmax of row rg + 4 cl
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const float scale = __shfl_sync(kFull, my_scale, (lane & ~(LPR - 1)) | r);
    float x[E];
    Q::values(raw[r], x);  // code values; the row is scale x these
    float pk = 0.f, pq = 0.f;
#pragma unroll
    for (int e = 0; e < E; ++e) pk = fmaf(x[e], kf[e], pk), pq = fmaf(x[e], qf[e], pq);
    pk = scale * sum_lanes<1, LPR>(pk), pq = scale * sum_lanes<1, LPR>(pq);
    const float d = g.beta * (st.v_at(0, rg + RPI * r) - g.decay * pk);
    const float ds = g.decay * scale;
    float amax = 0.f;
#pragma unroll
    for (int e = 0; e < E; ++e) x[e] = fmaf(d, kf[e], ds * x[e]), amax = fmaxf(amax, fabsf(x[e]));
    amax = max_lanes<1, LPR>(amax);
    if (a.update_state) {
      uint32_t c[4];
      Q::template narrow_words<4>(x, Q::row_scale(amax).inv, c);
      M::store16(codes + row(r) * kHeadK + cl * E, make_uint4(c[0], c[1], c[2], c[3]));
    }
    if (cl == r) my_amax = amax;
    if (cl == 0) o[rg + RPI * r] = f32_to_bf16_bits(g.decay * pq + d * kq);
  }
  if (a.update_state && holds_scale) scales[row(cl)] = Q::row_scale(my_amax).scale;
}

// The T-token vk kernel for 8-bit pools (mtp: cache, rollback, read-only): step_vk_kernel with the
// fp32 register tile (VkTile<float, ROWS, Q>): its 4-value chunks come from 32-bit loads of codes
// (4 per lane and row, each instruction reading whole 32-byte segments) and the rows' scales,
// all issued before the first use; the cache entries and the final state are stored as codes
// with a new scale per row (VkTile::store_codes). The slot or the rollback's cache entry is read
// before any cache store of the same rows, as in step_vk_kernel.
template <class Q, int ROWS, class M = InPlaceMem, int MINW = tokens_vk_8bit_min_warps(ROWS)>
__global__ void __launch_bounds__(32, MINW) step_vk_8bit_kernel(const decode::Args a) {
  using Tile = VkTile<float, ROWS, Q>;
  constexpr int E = Tile::E, NC = Tile::NC, RPI = Tile::RPI;
  extern __shared__ uint4 smem_raw[];
  const int lane = threadIdx.x & 31;
  WarpTask w;
  if (!warp_task<1>(a, a.V / Tile::RPW, w)) return;
  Tile tile(lane, w.tile * Tile::RPW);
  const int TC = a.T < kVkStageTokens ? a.T : kVkStageTokens;
  const Stage st(smem_raw, TC, Tile::RPW, true);
  st.start(a, w.b, w.hk, w.h, tile.row0, 0, TC, lane);
  const WarpGateIn gate_in = load_gate_inputs(a, w.b, w.h, lane);

  if (w.slot < 0) {  // padding row: zero o and the cache (codes and scales), touch no slot
    __pipeline_wait_prior(0);
    tile.zero_outputs(a, w.b, w.h, lane);
    return;
  }

  // The starting state: the slot, or the rollback's cache entry accepted[b] - 1 (64-bit rows).
  const int acc = a.accepted != nullptr ? a.accepted[w.b] : 0;
  const int64_t slot_rows = (w.slot * a.HV + w.h) * int64_t(a.V);
  const int64_t from_rows = acc > 0 ? ((w.b * a.T + acc - 1) * a.HV + w.h) * int64_t(a.V) : slot_rows;
  const uint8_t* from = static_cast<const uint8_t*>(acc > 0 ? a.intermediate : a.pool) + from_rows * kHeadK;
  const float* from_scales = (acc > 0 ? a.intermediate_scale : a.pool_scale) + from_rows;
  uint32_t raw[ROWS][NC];
  float scale[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int c = 0; c < NC; ++c)
      raw[r][c] = M::load4(from + (tile.row0 + tile.rg + RPI * r) * kHeadK + (tile.cl + Tile::LPR * c) * E);
#pragma unroll
  for (int r = 0; r < ROWS; ++r) scale[r] = from_scales[tile.row0 + tile.rg + RPI * r];
  const WarpGates gates = gates_of(a, gate_in, lane);
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int c = 0; c < NC; ++c) Q::widen4(raw[r][c], scale[r], &tile.s[r][c * E]);

  tile.template run<M>(a, st, gates, w, TC, lane);
  if (a.update_state)
    tile.template store_codes<M>(static_cast<uint8_t*>(a.pool) + slot_rows * kHeadK, a.pool_scale + slot_rows,
                                 tile.lazy.c);
}

}  // namespace gdn::step

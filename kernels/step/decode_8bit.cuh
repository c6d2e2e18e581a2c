// The single-token vk kernel for 8-bit pools (docs/state-8bit.md): decode_vk_kernel's work split
// (8 lanes per row of K = 128, 4 rows per load instruction, ROWS loads per lane), with one
// 16-byte load holding a lane's 16 codes of a row and one 4-byte load its row's fp32 scale, all
// issued before the first use. The row is widened to fp32 (code x scale), updated in fp32 and
// stored as codes with a new scale: the updated row's absmax over its 8 lanes (a butterfly max),
// scale = absmax / Q, codes = RNE(x Q / absmax) saturated, as core/state_quant.h on the host.
// A separate template, so the fp32 and bf16 builds of decode_vk_kernel are untouched.
#pragma once

#include <cuda_fp8.h>

#include "step/kernel.cuh"

namespace gdn::step {

// fp8 e4m3 codes: 16 per 16-byte chunk, converted two at a time.
struct Fp8Codes {
  static constexpr float kQ = 448.f;
  __device__ static void widen(uint4 u, float scale, float* x) {
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const __nv_fp8x2_storage_t pair = __nv_fp8x2_storage_t(w[i / 2] >> (16 * (i % 2)));
      const float2 f = __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(pair, __NV_E4M3)));
      x[2 * i] = __fmul_rn(f.x, scale), x[2 * i + 1] = __fmul_rn(f.y, scale);
    }
  }
  __device__ static uint4 narrow(const float* x, float r) {
    uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(__fmul_rn(x[4 * i], r), __fmul_rn(x[4 * i + 1], r)),
                                                   __NV_SATFINITE, __NV_E4M3);
      const uint32_t hi = __nv_cvt_float2_to_fp8x2(
          make_float2(__fmul_rn(x[4 * i + 2], r), __fmul_rn(x[4 * i + 3], r)), __NV_SATFINITE, __NV_E4M3);
      w[i] = lo | (hi << 16);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
  }
  // 4 codes in a 32-bit word (the T-token kernel's fp32 register layout).
  __device__ static void widen4(uint32_t w, float scale, float* x) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const float2 f = __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(w >> (16 * i)), __NV_E4M3)));
      x[2 * i] = __fmul_rn(f.x, scale), x[2 * i + 1] = __fmul_rn(f.y, scale);
    }
  }
  __device__ static uint32_t narrow4(const float* x, float r) {
    const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(__fmul_rn(x[0], r), __fmul_rn(x[1], r)), __NV_SATFINITE, __NV_E4M3);
    const uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(__fmul_rn(x[2], r), __fmul_rn(x[3], r)), __NV_SATFINITE, __NV_E4M3);
    return lo | (hi << 16);
  }
};

// int8 codes (-127..127): 16 per chunk.
struct Int8Codes {
  static constexpr float kQ = 127.f;
  __device__ static void widen(uint4 u, float scale, float* x) {
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 16; ++i) x[i] = __fmul_rn(float(int8_t(w[i / 4] >> (8 * (i % 4)))), scale);
  }
  __device__ static uint4 narrow(const float* x, float r) {
    uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const int c = __float2int_rn(fminf(fmaxf(__fmul_rn(x[i], r), -127.f), 127.f));  // ties to even
      w[i / 4] |= uint32_t(c & 0xff) << (8 * (i % 4));
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
  }
  __device__ static void widen4(uint32_t w, float scale, float* x) {
#pragma unroll
    for (int i = 0; i < 4; ++i) x[i] = __fmul_rn(float(int8_t(w >> (8 * i))), scale);
  }
  __device__ static uint32_t narrow4(const float* x, float r) {
    uint32_t w = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i)
      w |= uint32_t(__float2int_rn(fminf(fmaxf(__fmul_rn(x[i], r), -127.f), 127.f)) & 0xff) << (8 * i);
    return w;
  }
};

template <class Q, int ROWS, class M = InPlaceMem, int W = kWarps>
__global__ void __launch_bounds__(W * 32, decode_vk_min_warps(true, ROWS) / W)
    decode_vk_8bit_kernel(const decode::Args a) {
  constexpr int LPR = 8, E = 16, RPI = 32 / LPR, RPW = RPI * ROWS;
  static_assert(E * LPR == kHeadK, "a lane holds one 16-byte chunk of codes per row");

  extern __shared__ uint4 smem_raw[];
  const int lane = threadIdx.x & 31, cl = lane % LPR, rg = lane / LPR;
  WarpTask w;
  if (!warp_task<W>(a, a.V / RPW, w)) return;
  const int row0 = w.tile * RPW;
  const Stage st(reinterpret_cast<char*>(smem_raw) + (threadIdx.x >> 5) * stage_bytes(1, RPW), 1, RPW);
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
  float scale[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) raw[r] = M::load16(codes + row(r) * kHeadK + cl * E);
#pragma unroll
  for (int r = 0; r < ROWS; ++r) scale[r] = scales[row(r)];
  const TokenGate g = token_gate(a.gate, gate_in);

  st.finish(1, a.l2norm, a.scale, lane);
  float kf[E], qf[E];
#pragma unroll
  for (int half = 0; half < E; half += 8) {  // this lane's 16 values of k and q, 8 per shared load
    load_bf16<8>(st.k(0) + cl * E + half, kf + half);
    load_bf16<8>(st.q(0) + cl * E + half, qf + half);
  }
  const float4 nm = st.norms[0];  // rk, rq (scale folded in), k.q of the normalised vectors

#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    float x[E];
    Q::widen(raw[r], scale[r], x);
    float pk = 0.f, pq = 0.f;
#pragma unroll
    for (int e = 0; e < E; ++e) pk = fmaf(x[e], kf[e], pk), pq = fmaf(x[e], qf[e], pq);
    pk = sum_lanes<1, LPR>(pk), pq = sum_lanes<1, LPR>(pq);
    const float d = g.beta * (st.v_at(0, rg + RPI * r) - g.decay * nm.x * pk);
    const float dk = d * nm.x;
    float amax = 0.f;
#pragma unroll
    for (int e = 0; e < E; ++e) x[e] = fmaf(dk, kf[e], g.decay * x[e]), amax = fmaxf(amax, fabsf(x[e]));
    if (a.update_state) {
      amax = max_lanes<1, LPR>(amax);
      M::store16(codes + row(r) * kHeadK + cl * E, Q::narrow(x, amax > 0.f ? __fdiv_rn(Q::kQ, amax) : 0.f));
      if (cl == 0) scales[row(r)] = __fdiv_rn(amax, Q::kQ);
    }
    if (cl == 0) o[rg + RPI * r] = f32_to_bf16_bits(g.decay * nm.y * pq + d * nm.z);
  }
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
      raw[r][c] = *reinterpret_cast<const uint32_t*>(from + (tile.row0 + tile.rg + RPI * r) * kHeadK +
                                                     (tile.cl + Tile::LPR * c) * E);
#pragma unroll
  for (int r = 0; r < ROWS; ++r) scale[r] = from_scales[tile.row0 + tile.rg + RPI * r];
  const WarpGates gates = gates_of(a, gate_in, lane);
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int c = 0; c < NC; ++c) Q::widen4(raw[r][c], scale[r], &tile.s[r][c * E]);

  tile.template run<M>(a, st, gates, w, TC, lane);
  if (a.update_state)
    tile.store_codes(static_cast<uint8_t*>(a.pool) + slot_rows * kHeadK, a.pool_scale + slot_rows, tile.lazy.c);
}

}  // namespace gdn::step

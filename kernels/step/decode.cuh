// The single-token (T = 1, no cache) kernels, vk then kv.
//
// vk: Same work split as step_vk_kernel, but the tile
// stays in registers as loaded (fp32, or packed bf16: half the registers per byte in flight, so a
// bf16 warp holds twice the rows) and is widened on use; each row is finished (both dots, update,
// store) before the next one, so only one row is widened at a time and its store leaves early.
// The decay is applied eagerly (a single token gains nothing from the lazy form).
#pragma once

#include "step/kernel.cuh"

namespace gdn::step {

// Resident warps per SM the register budget is set for (plan.h decode_vk_min_warps): 20 (<= 96
// registers) where the tile allows, 16 for the 4-deep fp32 tile. A bf16 tile at 102 registers
// runs 16 warps and 8-17 % slower than at 96 (H200, B = 128..512).
template <class TS, int ROWS, class M = InPlaceMem, int W = kWarps>
__global__ void __launch_bounds__(W * 32, decode_vk_min_warps(sizeof(TS) == 2, ROWS) / W)
    decode_vk_kernel(const decode::Args a) {
  using G = VkGeom<TS, ROWS>;
  using C = typename G::C;
  constexpr int LPR = G::LPR, E = G::E, KPL = G::KPL, NC = G::NC, RPI = G::RPI, RPW = G::RPW;

  extern __shared__ uint4 smem_raw[];
  const int lane = threadIdx.x & 31, cl = lane % LPR, rg = lane / LPR;
  WarpTask w;
  if (!warp_task<W>(a, a.V / RPW, w)) return;
  const int row0 = w.tile * RPW;
  const Stage st(reinterpret_cast<char*>(smem_raw) + (threadIdx.x >> 5) * stage_bytes(1, RPW), 1, RPW);
  st.start(a, w.b, w.hk, w.h, row0, 0, 1, lane);
  const GateIn gate_in = load_gate(a.gate, w.b, w.h, a.HV);  // one address for the warp: a broadcast
  uint16_t* o = a.o + (w.b * a.HV + w.h) * a.V + row0;

  if (w.slot < 0) {  // padding row: zero o, touch no slot
    __pipeline_wait_prior(0);
    if (lane < RPW) o[lane] = 0;
    return;
  }

  auto elem = [&](int r, int c) { return (row0 + rg + RPI * r) * kHeadK + (cl + LPR * c) * E; };
  TS* pool = static_cast<TS*>(a.pool) + head_offset(a, w.slot, w.h);
  uint4 raw[ROWS][NC];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int c = 0; c < NC; ++c) raw[r][c] = M::load16(pool + elem(r, c));
  const TokenGate g = token_gate(a.gate, gate_in);

  st.finish(1, a.l2norm, a.scale, lane);
  float kf[KPL], qf[KPL];
#pragma unroll
  for (int c = 0; c < NC; ++c) {
    load_bf16<E>(st.k(0) + (cl + LPR * c) * E, &kf[c * E]);
    load_bf16<E>(st.q(0) + (cl + LPR * c) * E, &qf[c * E]);
  }
  const float4 nm = st.norms[0];  // rk, rq (scale folded in), k.q of the normalised vectors

#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    float pk = 0.f, pq = 0.f;
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      float x[E];
      C::widen(raw[r][c], x);
#pragma unroll
      for (int e = 0; e < E; ++e) pk = fmaf(x[e], kf[c * E + e], pk), pq = fmaf(x[e], qf[c * E + e], pq);
    }
    pk = sum_lanes<1, LPR>(pk), pq = sum_lanes<1, LPR>(pq);
    // Row j of the decayed state a S: (a S_j).k^ = a rk pk; the update adds d k^ = d rk k.
    const float d = g.beta * (st.v_at(0, rg + RPI * r) - g.decay * nm.x * pk);
    const float dk = d * nm.x;
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      float x[E];
      C::widen(raw[r][c], x);
#pragma unroll
      for (int e = 0; e < E; ++e) x[e] = fmaf(dk, kf[c * E + e], g.decay * x[e]);
      if (a.update_state) M::store16(pool + elem(r, c), C::narrow(x));
    }
    if (cl == 0) o[rg + RPI * r] = f32_to_bf16_bits(g.decay * nm.y * pq + d * nm.z);
  }
}

// The single-token kv kernel, same idea: a warp owns CW = LPK * E columns and all K rows, each
// lane NR consecutive rows of one 16-byte chunk, kept as loaded (a bf16 warp thus holds 32
// columns, twice step_kv_kernel's 16, at the same register count). The dots are sums over the
// lanes holding the same columns.
// At least 12 warps per SM (<= 168 registers): left alone, ptxas keeps the bf16 tile widened (230).
template <class TS, int LPK, class M = InPlaceMem, int W = kWarps>
__global__ void __launch_bounds__(W * 32, kDecodeKvMinWarps / W) decode_kv_kernel(const decode::Args a) {
  using G = KvGeom<TS, LPK>;
  using C = typename G::C;
  constexpr int E = G::E, CW = G::CW, NR = G::NR;

  extern __shared__ uint4 smem_raw[];
  const int lane = threadIdx.x & 31, cl = lane % LPK, rg = lane / LPK;
  WarpTask w;
  if (!warp_task<W>(a, a.V / CW, w)) return;
  const int col0 = w.tile * CW;
  const Stage st(reinterpret_cast<char*>(smem_raw) + (threadIdx.x >> 5) * stage_bytes(1, CW), 1, CW);
  st.start(a, w.b, w.hk, w.h, col0, 0, 1, lane);
  const GateIn gate_in = load_gate(a.gate, w.b, w.h, a.HV);
  uint16_t* o = a.o + (w.b * a.HV + w.h) * a.V + col0;

  if (w.slot < 0) {
    __pipeline_wait_prior(0);
    if (lane < CW) o[lane] = 0;
    return;
  }

  auto elem = [&](int i) { return (rg * NR + i) * a.V + col0 + cl * E; };
  TS* pool = static_cast<TS*>(a.pool) + head_offset(a, w.slot, w.h);
  uint4 raw[NR];
#pragma unroll
  for (int i = 0; i < NR; ++i) raw[i] = M::load16(pool + elem(i));
  const TokenGate g = token_gate(a.gate, gate_in);

  st.finish(1, a.l2norm, a.scale, lane);
  float kr[NR], qr[NR];
#pragma unroll
  for (int i = 0; i < NR; i += 8) {
    load_bf16<8>(st.k(0) + rg * NR + i, &kr[i]);
    load_bf16<8>(st.q(0) + rg * NR + i, &qr[i]);
  }
  const float4 nm = st.norms[0];  // rk, rq (scale folded in), k.q of the normalised vectors

  float pk[E], pq[E];
#pragma unroll
  for (int e = 0; e < E; ++e) pk[e] = 0.f, pq[e] = 0.f;
#pragma unroll
  for (int i = 0; i < NR; ++i) {
    float x[E];
    C::widen(raw[i], x);
#pragma unroll
    for (int e = 0; e < E; ++e) pk[e] = fmaf(x[e], kr[i], pk[e]), pq[e] = fmaf(x[e], qr[i], pq[e]);
  }
#pragma unroll
  for (int e = 0; e < E; ++e) pk[e] = sum_lanes<LPK, 32>(pk[e]), pq[e] = sum_lanes<LPK, 32>(pq[e]);

  float dk[E], out[E];
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const float d = g.beta * (st.v_at(0, cl * E + e) - g.decay * nm.x * pk[e]);
    dk[e] = d * nm.x;
    out[e] = g.decay * nm.y * pq[e] + d * nm.z;
  }
  if (a.update_state) {
#pragma unroll
    for (int i = 0; i < NR; ++i) {
      float x[E];
      opaque(raw[i]);
      C::widen(raw[i], x);
#pragma unroll
      for (int e = 0; e < E; ++e) x[e] = fmaf(dk[e], kr[i], g.decay * x[e]);
      M::store16(pool + elem(i), C::narrow(x));
    }
  }
  if (rg == 0) store_bf16<E>(o + cl * E, out);
}

}  // namespace gdn::step

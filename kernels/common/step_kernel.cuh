// The bandwidth-bound decode (T = 1) and mtp (T > 1) kernels, one per state layout.
//
// Work split: one warp owns one tile of one (row, value head) state and keeps it in registers for
// all T tokens: the tile is read once, written once (if update_state) and, with the mtp cache,
// stored to `intermediate` after every token. Warps never wait on each other (no block
// barriers), so a block is just kWarps independent warps. The token inputs need no second trip to
// memory: q, k and v of up to kStageTokens tokens arrive by asynchronous copies issued before the
// state loads (their norms are then computed for all staged tokens at once), and the gates are
// read one token per lane.
//
//   vk ([V][K], K contiguous): rows are independent given k, q and the gate. 8 lanes share a row
//     (16 K values each, in 16-byte chunks interleaved so that every load instruction reads whole
//     128-byte segments); a warp holds 4 rows per instruction and ROWS instructions deep. One
//     pass over a row gives both dots S_j.k and S_j.q; o_j = a (S_j.q) + d_j (k.q) because the
//     update adds d_j k to the row.
//   kv ([K][V], V contiguous): columns are independent. A warp owns CW = LPK * E columns and all
//     K rows (each lane NR = K / (32 / LPK) consecutive rows of one 16-byte chunk); the dots are
//     sums over the lanes that hold the same columns.
//
// The decay is applied lazily: registers hold s with state = c * s, so a token costs three
// operations per element (two dots, one update) instead of four.
#pragma once

#include "common/step_device.cuh"

namespace gdn::fast {

// Which (row b, value head h, tile) this warp works on; false for warps past the end.
struct WarpTask {
  int64_t b = 0;
  int h = 0, hk = 0, tile = 0;
  int64_t slot = -1;
};
// Warp ids are 32-bit (step_support caps the number of tiles): 64-bit division is a long
// software sequence, and it sits before the slot load on every warp's critical path.
template <int W = kWarps> __device__ __forceinline__ bool warp_task(const decode::Args& a, int tiles, WarpTask& w) {
  const uint32_t gw = blockIdx.x * uint32_t(W) + (threadIdx.x >> 5);
  if (gw >= uint32_t(a.B * a.HV * tiles)) return false;
  const uint32_t bh = gw / uint32_t(tiles), hv = uint32_t(a.HV);
  w.tile = int(gw - bh * uint32_t(tiles));
  w.b = bh / hv;
  w.h = int(bh - uint32_t(w.b) * hv);
  w.hk = w.h / (a.HV / a.H);
  w.slot = a.index_dtype == DType::i32 ? int64_t(static_cast<const int32_t*>(a.indices)[w.b])
                                       : static_cast<const int64_t*>(a.indices)[w.b];
  return true;
}

// Offset (elements) of the state of (slot or row, head) in a [.., HV, state] buffer, in 64 bits.
__device__ __forceinline__ int64_t head_offset(const decode::Args& a, int64_t outer, int h) {
  return (outer * a.HV + h) * int64_t(a.V) * kHeadK;
}

// The scale c of the register tile (state = c * s): decays multiply c, and c is folded into s
// only when it drops below kMinLazyScale, so 1 / c stays finite and s stays in range.
constexpr float kMinLazyScale = 1.0f / (1u << 30);
struct LazyDecay {
  float c = 1.f;
  // Applies decay a; returns the factor s must be multiplied by now (1 = nothing to do).
  __device__ float apply(float a) {
    const float cn = c * a;
    if (cn < kMinLazyScale) {
      c = 1.f;
      return cn;
    }
    c = cn;
    return 1.f;
  }
};

// ---- vk layout -------------------------------------------------------------------------------
template <class TS, int ROWS, class M = InPlaceMem, int W = kWarps>
__global__ void __launch_bounds__(W * 32) step_vk_kernel(const decode::Args a) {
  using C = Chunk<TS>;
  constexpr int LPR = 8;             // lanes per state row
  constexpr int E = C::E;            // values per 16-byte chunk
  constexpr int KPL = kHeadK / LPR;  // K values per lane per row
  constexpr int NC = KPL / E;        // chunks per lane per row
  constexpr int RPI = 32 / LPR;      // rows per load instruction
  constexpr int RPW = RPI * ROWS;    // rows per warp
  static_assert(NC >= 1 && NC * E * LPR == kHeadK, "a lane holds whole 16-byte chunks");

  extern __shared__ uint4 smem_raw[];
  const int lane = threadIdx.x & 31, cl = lane % LPR, rg = lane / LPR;
  WarpTask w;
  if (!warp_task<W>(a, a.V / RPW, w)) return;
  const int row0 = w.tile * RPW;
  const int TC = a.T < kStageTokens ? a.T : kStageTokens;
  const Stage st(reinterpret_cast<char*>(smem_raw) + (threadIdx.x >> 5) * stage_bytes(TC, RPW), TC, RPW);
  st.start(a, w.b, w.hk, w.h, row0, 0, TC, lane);
  const WarpGateIn gate_in = load_gate_inputs(a, w.b, w.h, lane);

  // This lane's element offset of (row r, chunk c) inside the head.
  auto elem = [&](int r, int c) { return (row0 + rg + RPI * r) * kHeadK + (cl + LPR * c) * E; };

  if (w.slot < 0) {  // padding row: zero o (and the cache), touch no slot
    __pipeline_wait_prior(0);
    for (int t = 0; t < a.T; ++t) {
      uint16_t* o = a.o + ((w.b * a.T + t) * a.HV + w.h) * a.V + row0;
      if (lane < RPW) o[lane] = 0;
      if (a.intermediate) {
        TS* dst = static_cast<TS*>(a.intermediate) + head_offset(a, w.b * a.T + t, w.h);
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
#pragma unroll
          for (int c = 0; c < NC; ++c) store16(dst + elem(r, c), make_uint4(0, 0, 0, 0));
      }
    }
    return;
  }

  TS* pool = static_cast<TS*>(a.pool) + head_offset(a, w.slot, w.h);
  uint4 raw[ROWS][NC];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int c = 0; c < NC; ++c) raw[r][c] = M::load16(pool + elem(r, c));
  const WarpGates gates = gates_of(a, gate_in, lane);

  float s[ROWS][KPL];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int c = 0; c < NC; ++c) C::widen(raw[r][c], &s[r][c * E]);

  // Stores the true state c * s.
  auto store_state = [&](TS* dst, float c) {
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int ch = 0; ch < NC; ++ch) {
        float x[E];
#pragma unroll
        for (int e = 0; e < E; ++e) x[e] = c * s[r][ch * E + e];
        M::store16(dst + elem(r, ch), C::narrow(x));
      }
  };

  LazyDecay lazy;
  for (int t0 = 0; t0 < a.T; t0 += TC) {
    const int n = a.T - t0 < TC ? a.T - t0 : TC;
    if (t0 > 0) {
      __syncwarp();  // every lane is done reading the previous tokens
      st.start(a, w.b, w.hk, w.h, row0, t0, n, lane);
    }
    st.finish(n, a.l2norm, a.scale, lane);
    for (int j = 0; j < n; ++j) {
      const int t = t0 + j;
      float kf[KPL], qf[KPL];
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        load_bf16<E>(st.k(j) + (cl + LPR * c) * E, &kf[c * E]);
        load_bf16<E>(st.q(j) + (cl + LPR * c) * E, &qf[c * E]);
      }
      const float4 nm = st.norms[j];  // rk, rq, kq
      const TokenGate g = gates.at(t);
      if (const float f = lazy.apply(g.decay); f != 1.f) {
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
#pragma unroll
          for (int e = 0; e < KPL; ++e) s[r][e] *= f;
      }
      const float c = lazy.c, inv_c = 1.f / c;
      // Both dots of every row first, so the row reductions overlap.
      float pk[ROWS], pq[ROWS];
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        pk[r] = 0.f, pq[r] = 0.f;
#pragma unroll
        for (int e = 0; e < KPL; ++e) pk[r] = fmaf(s[r][e], kf[e], pk[r]), pq[r] = fmaf(s[r][e], qf[e], pq[r]);
      }
#pragma unroll
      for (int r = 0; r < ROWS; ++r) pk[r] = sum_lanes<1, LPR>(pk[r]), pq[r] = sum_lanes<1, LPR>(pq[r]);

      uint16_t* o = a.o + ((w.b * a.T + t) * a.HV + w.h) * a.V + row0;
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        const float d = g.beta * (st.v_at(j, rg + RPI * r) - c * nm.x * pk[r]);
        const float dk = d * nm.x * inv_c;
#pragma unroll
        for (int e = 0; e < KPL; ++e) s[r][e] = fmaf(dk, kf[e], s[r][e]);
        if (cl == 0) o[rg + RPI * r] = f32_to_bf16_bits(c * nm.y * pq[r] + d * nm.z);
      }
      if (a.intermediate) store_state(static_cast<TS*>(a.intermediate) + head_offset(a, w.b * a.T + t, w.h), c);
    }
  }
  if (a.update_state) store_state(pool, lazy.c);
}

// ---- kv layout -------------------------------------------------------------------------------
// LPK lanes per K row, each one 16-byte chunk of E columns; a warp covers CW = LPK * E columns
// and all K rows, NR consecutive rows per lane.
template <class TS, int LPK, class M = InPlaceMem, int W = kWarps>
__global__ void __launch_bounds__(W * 32) step_kv_kernel(const decode::Args a) {
  using C = Chunk<TS>;
  constexpr int E = C::E;          // columns per lane (one 16-byte chunk)
  constexpr int CW = LPK * E;      // columns per warp
  constexpr int RPI = 32 / LPK;    // K rows per load instruction (row groups)
  constexpr int NR = kHeadK / RPI; // consecutive K rows per lane
  static_assert(NR % 8 == 0, "k and q of a lane's rows are read 8 at a time");

  extern __shared__ uint4 smem_raw[];
  const int lane = threadIdx.x & 31, cl = lane % LPK, rg = lane / LPK;
  WarpTask w;
  if (!warp_task<W>(a, a.V / CW, w)) return;
  const int col0 = w.tile * CW;
  const int TC = a.T < kStageTokens ? a.T : kStageTokens;
  const Stage st(reinterpret_cast<char*>(smem_raw) + (threadIdx.x >> 5) * stage_bytes(TC, CW), TC, CW);
  st.start(a, w.b, w.hk, w.h, col0, 0, TC, lane);
  const WarpGateIn gate_in = load_gate_inputs(a, w.b, w.h, lane);

  auto elem = [&](int i) { return (rg * NR + i) * a.V + col0 + cl * E; };

  if (w.slot < 0) {
    __pipeline_wait_prior(0);
    for (int t = 0; t < a.T; ++t) {
      uint16_t* o = a.o + ((w.b * a.T + t) * a.HV + w.h) * a.V + col0;
      if (lane < CW) o[lane] = 0;
      if (a.intermediate) {
        TS* dst = static_cast<TS*>(a.intermediate) + head_offset(a, w.b * a.T + t, w.h);
#pragma unroll
        for (int i = 0; i < NR; ++i) store16(dst + elem(i), make_uint4(0, 0, 0, 0));
      }
    }
    return;
  }

  TS* pool = static_cast<TS*>(a.pool) + head_offset(a, w.slot, w.h);
  uint4 raw[NR];
#pragma unroll
  for (int i = 0; i < NR; ++i) raw[i] = M::load16(pool + elem(i));
  const WarpGates gates = gates_of(a, gate_in, lane);

  float s[NR][E];
#pragma unroll
  for (int i = 0; i < NR; ++i) C::widen(raw[i], s[i]);

  auto store_state = [&](TS* dst, float c) {
#pragma unroll
    for (int i = 0; i < NR; ++i) {
      float x[E];
#pragma unroll
      for (int e = 0; e < E; ++e) x[e] = c * s[i][e];
      M::store16(dst + elem(i), C::narrow(x));
    }
  };

  LazyDecay lazy;
  for (int t0 = 0; t0 < a.T; t0 += TC) {
    const int n = a.T - t0 < TC ? a.T - t0 : TC;
    if (t0 > 0) {
      __syncwarp();
      st.start(a, w.b, w.hk, w.h, col0, t0, n, lane);
    }
    st.finish(n, a.l2norm, a.scale, lane);
    for (int j = 0; j < n; ++j) {
      const int t = t0 + j;
      const float4 nm = st.norms[j];  // rk, rq, kq
      const TokenGate g = gates.at(t);
      if (const float f = lazy.apply(g.decay); f != 1.f) {
#pragma unroll
        for (int i = 0; i < NR; ++i)
#pragma unroll
          for (int e = 0; e < E; ++e) s[i][e] *= f;
      }
      const float c = lazy.c, inv_c = 1.f / c;
      float kr[NR], qr[NR];
#pragma unroll
      for (int i = 0; i < NR; i += 8) {
        load_bf16<8>(st.k(j) + rg * NR + i, &kr[i]);
        load_bf16<8>(st.q(j) + rg * NR + i, &qr[i]);
      }

      float pk[E], pq[E];
#pragma unroll
      for (int e = 0; e < E; ++e) {
        pk[e] = 0.f, pq[e] = 0.f;
#pragma unroll
        for (int i = 0; i < NR; ++i) pk[e] = fmaf(s[i][e], kr[i], pk[e]), pq[e] = fmaf(s[i][e], qr[i], pq[e]);
      }
#pragma unroll
      for (int e = 0; e < E; ++e) pk[e] = sum_lanes<LPK, 32>(pk[e]), pq[e] = sum_lanes<LPK, 32>(pq[e]);

      float dk[E], o[E];
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const float d = g.beta * (st.v_at(j, cl * E + e) - c * nm.x * pk[e]);
        dk[e] = d * nm.x * inv_c;
        o[e] = c * nm.y * pq[e] + d * nm.z;
      }
#pragma unroll
      for (int i = 0; i < NR; ++i)
#pragma unroll
        for (int e = 0; e < E; ++e) s[i][e] = fmaf(dk[e], kr[i], s[i][e]);
      if (rg == 0) store_bf16<E>(a.o + ((w.b * a.T + t) * a.HV + w.h) * a.V + col0 + cl * E, o);
      if (a.intermediate) store_state(static_cast<TS*>(a.intermediate) + head_offset(a, w.b * a.T + t, w.h), c);
    }
  }
  if (a.update_state) store_state(pool, lazy.c);
}

}  // namespace gdn::fast

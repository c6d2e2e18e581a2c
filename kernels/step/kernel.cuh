// The bandwidth-bound decode (T = 1) and mtp (T > 1) kernels, one per state layout.
//
// Work split: one warp owns one tile of one (row, value head) state and keeps it in registers for
// all T tokens: the tile is read once, written once (if update_state) and, with the mtp cache,
// stored to `intermediate` after every token. Warps never wait on each other (no block
// barriers), so a block is just independent warps. The token inputs need no second trip to
// memory: q, k and v of up to kStageTokens tokens (kVkStageTokens for the T-token vk kernel)
// arrive by asynchronous copies issued before the state loads (their norms are then computed for
// all staged tokens at once), and the gates are read one token per lane.
//
//   vk ([V][K], K contiguous): rows are independent given k, q and the gate. 8 lanes share a row
//     (16 K values each, in 16-byte chunks interleaved so that every load instruction reads whole
//     128-byte segments); a warp holds 4 rows per instruction and ROWS instructions deep. One
//     pass over a row gives both dots S_j.k and S_j.q; o_j = a (S_j.q) + d_j (k.q) because the
//     update adds d_j k to the row. The T-token vk kernel stages k^ and q^ in fp32 (normalised
//     once per warp, not widened per token), sums the 2 ROWS dots with a transposing butterfly
//     (one sum per lane, each lane's delta computed once) and runs one warp per block at 128
//     registers: 16 warps per SM (kernels/step/README.md).
//   kv ([K][V], V contiguous): columns are independent. A warp owns CW = LPK * E columns and all
//     K rows (each lane NR = K / (32 / LPK) consecutive rows of one 16-byte chunk); the dots are
//     sums over the lanes that hold the same columns.
//
// The decay is applied lazily: registers hold s with state = c * s, so a token costs three
// operations per element (two dots, one update) instead of four.
#pragma once

#include <type_traits>

#include "step/device.cuh"

namespace gdn::step {

// Which (row b, value head h, tile) this warp works on; false for warps past the end.
struct WarpTask {
  int64_t b = 0;
  int h = 0, hk = 0, tile = 0;
  int64_t slot = -1;
};
// The slot of batch row b (-1 = padding).
__device__ __forceinline__ int64_t slot_of(const decode::Args& a, int64_t b) { return slot_at(a.indices, a.index_dtype, b); }
// Tile i of `tiles` per (row, value head), rows outermost; the slot is left for the caller.
// Warp ids are 32-bit (step_support caps the number of tiles): 64-bit division is a long
// software sequence, and it sits before the slot load on every warp's critical path.
__device__ __forceinline__ WarpTask task_at(const decode::Args& a, int tiles, uint32_t i) {
  WarpTask w;
  const uint32_t bh = i / uint32_t(tiles), hv = uint32_t(a.HV);
  w.tile = int(i - bh * uint32_t(tiles));
  w.b = bh / hv;
  w.h = int(bh - uint32_t(w.b) * hv);
  w.hk = int(uint32_t(w.h) * uint32_t(a.H) / uint32_t(a.HV));  // h / (HV / H): one unsigned division
  return w;
}
template <int W = kWarps> __device__ __forceinline__ bool warp_task(const decode::Args& a, int tiles, WarpTask& w) {
  const uint32_t gw = blockIdx.x * uint32_t(W) + (threadIdx.x >> 5);
  if (gw >= uint32_t(a.B * a.HV * tiles)) return false;
  w = task_at(a, tiles, gw);
  w.slot = slot_of(a, w.b);
  return true;
}

// Offset (elements) of the state of (slot or row, head) in a [.., HV, state] buffer, in 64 bits.
__device__ __forceinline__ int64_t head_offset(const decode::Args& a, int64_t outer, int h) {
  return (outer * a.HV + h) * int64_t(a.V) * kHeadK;
}

// Where row b's starting state of head h is read: its pool slot, or with the rollback input
// (a = accepted[b] > 0) the previous step's cache entry a - 1. Each warp reads its tile before
// it stores any cache entry of the same rows, so the cache can be overwritten in place.
template <class TS>
__device__ __forceinline__ const TS* start_state(const decode::Args& a, int64_t b, int64_t slot, int h) {
  const int acc = a.accepted != nullptr ? a.accepted[b] : 0;
  if (acc > 0) return static_cast<const TS*>(a.intermediate) + head_offset(a, b * a.T + acc - 1, h);
  return static_cast<const TS*>(a.pool) + head_offset(a, slot, h);
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
// Geometry of a warp's vk tile (shared with decode_vk_kernel): 8 lanes per state row, 4 rows per
// load instruction, ROWS instructions deep.
template <class TS, int ROWS> struct VkGeom {
  using C = Chunk<TS>;
  static constexpr int LPR = 8;             // lanes per state row
  static constexpr int E = C::E;            // values per 16-byte chunk
  static constexpr int KPL = kHeadK / LPR;  // K values per lane per row
  static constexpr int NC = KPL / E;        // chunks per lane per row
  static constexpr int RPI = 32 / LPR;      // rows per load instruction
  static constexpr int RPW = RPI * ROWS;    // rows per warp
  static_assert(NC >= 1 && NC * E * LPR == kHeadK, "a lane holds whole 16-byte chunks");
};

// One warp's vk tile in registers: RPW = 4 x ROWS rows of one (row, value head) state, and the
// token loop over it (step_vk_kernel). Q (void but for 8-bit pools: decode_8bit.cuh's code
// formats, with TS = float for the fp32 register layout) makes the cache stores 8-bit codes
// with a scale per row; the void builds are the fp32 and bf16 kernels as they were.
template <class TS, int ROWS, class Q = void> struct VkTile : VkGeom<TS, ROWS> {
  using G = VkGeom<TS, ROWS>;
  using typename G::C;
  using G::LPR, G::E, G::KPL, G::NC, G::RPI, G::RPW;

  int cl, rg, row0;  // lane in its row, row group, first row of the tile
  float s[ROWS][KPL];
  LazyDecay lazy;

  __device__ VkTile(int lane, int row0_) : cl(lane % LPR), rg(lane / LPR), row0(row0_) {}

  // This lane's element offset of (row r, chunk c) inside the head.
  __device__ int elem(int r, int c) const { return (row0 + rg + RPI * r) * kHeadK + (cl + LPR * c) * E; }

  __device__ void widen(const uint4 (&raw)[ROWS][NC]) {
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int c = 0; c < NC; ++c) C::widen(raw[r][c], &s[r][c * E]);
  }

  // Stores the true state c * s to the head at `dst`.
  template <class M> __device__ void store(TS* dst, float c) const {
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int ch = 0; ch < NC; ++ch) {
        float x[E];
#pragma unroll
        for (int e = 0; e < E; ++e) x[e] = c * s[r][ch * E + e];
        M::store16(dst + elem(r, ch), C::narrow(x));
      }
  }

  // 8-bit pools: the true state c * s of every row as codes (4 per 32-bit store, the fp32
  // layout's chunks) and one new scale per row, from the row's absmax over its 8 lanes.
  template <class M> __device__ void store_codes(uint8_t* codes, float* scales, float c) const {
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      float m = 0.f;  // c > 0 and rounding is monotonic: max |c s_e| = c max |s_e|, exactly
#pragma unroll
      for (int e = 0; e < KPL; ++e) m = fmaxf(m, fabsf(s[r][e]));
      const float amax = max_lanes<1, LPR>(c * m);
      const float inv = Q::row_scale(amax).inv;
      const int row = row0 + rg + RPI * r;
      float x[KPL];
#pragma unroll
      for (int e = 0; e < KPL; ++e) x[e] = c * s[r][e];
      uint32_t w[NC];
      Q::template narrow_words<NC>(x, inv, w);
#pragma unroll
      for (int ch = 0; ch < NC; ++ch) M::store4(codes + row * kHeadK + (cl + LPR * ch) * E, w[ch]);
      if (cl == 0) scales[row] = Q::row_scale(amax).scale;
    }
  }

  // Padding row: zero o (and the cache) of every token, touch no slot.
  __device__ void zero_outputs(const decode::Args& a, int64_t b, int h, int lane) const {
    for (int t = 0; t < a.T; ++t) {
      uint16_t* o = a.o + ((b * a.T + t) * a.HV + h) * a.V + row0;
      if (lane < RPW) o[lane] = 0;
      if constexpr (!std::is_void_v<Q>) {
        if (a.intermediate) {
          const int64_t rows = (b * a.T + t) * a.HV + h, at = rows * a.V;  // the entry's first row
#pragma unroll
          for (int r = 0; r < ROWS; ++r) {
            const int row = row0 + rg + RPI * r;
#pragma unroll
            for (int c = 0; c < NC; ++c)
              *reinterpret_cast<uint32_t*>(static_cast<uint8_t*>(a.intermediate) + (at + row) * kHeadK +
                                           (cl + LPR * c) * E) = 0u;
            if (cl == 0) a.intermediate_scale[at + row] = 0.f;
          }
        }
        continue;
      }
      if (a.intermediate) {
        TS* dst = static_cast<TS*>(a.intermediate) + head_offset(a, b * a.T + t, h);
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
#pragma unroll
          for (int c = 0; c < NC; ++c) store16(dst + elem(r, c), make_uint4(0, 0, 0, 0));
      }
    }
  }

  // Both dots of every row with staged token j (fp32 k^ and q^), summed over the row's 8 lanes by
  // a transposing butterfly: lane cl returns row mr = (cl >> SH) / 2's s.k^ (even cl >> SH) or s.q^
  // (odd); its partner (lane bit SH flipped) holds the other. Both dots first, so the row
  // reductions overlap.
  static constexpr int SH = ROWS == 4 ? 0 : ROWS == 2 ? 1 : 2;
  __device__ float dots(const Stage& st, int j) const {
    float x[2 * ROWS] = {};  // partial S_r.k^, S_r.q^
#pragma unroll
    for (int ch = 0; ch < NC; ++ch) {
      float kc[E], qc[E];
      load_f32<E>(st.k32(j) + (cl + LPR * ch) * E, kc);
      load_f32<E>(st.q32(j) + (cl + LPR * ch) * E, qc);
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int e = 0; e < E; ++e) {
          x[2 * r] = fmaf(s[r][ch * E + e], kc[e], x[2 * r]);
          x[2 * r + 1] = fmaf(s[r][ch * E + e], qc[e], x[2 * r + 1]);
        }
    }
    return transpose_sum8<2 * ROWS>(x, cl);
  }

  // Tokens [t0, t0 + n) of row b, head h, staged in st (finished, with the fp32 k^ and q^): o of
  // every token, the cache after every token. k^ and q^ are read from shared memory chunk by
  // chunk, in the dots and again in the update, instead of being held: that keeps the tile at
  // 128 registers (16 resident warps per SM instead of 12).
  template <class M>
  __device__ void tokens(const decode::Args& a, const Stage& st, const WarpGates& gates, int64_t b, int h, int t0,
                         int n) {
    const int idx = cl >> SH, mr = idx >> 1;
    const bool is_q = idx & 1;
    // o of (token 0, this lane's row mr); tokens are o_stride apart.
    uint16_t* const o_row = a.o + (b * a.T * a.HV + h) * a.V + row0 + rg + RPI * mr;
    const int64_t o_stride = int64_t(a.HV) * a.V;
    for (int j = 0; j < n; ++j) {
      const int t = t0 + j;
      const float kq = st.kq(j);
      const TokenGate g = gates.at(t);
      if (const float f = lazy.apply(g.decay); f != 1.f) {
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
#pragma unroll
          for (int e = 0; e < KPL; ++e) s[r][e] *= f;
      }
      // c >= kMinLazyScale: the approximate reciprocal (1 ulp) needs no slow path.
      const float c = lazy.c, inv_c = __fdividef(1.f, c);
      // Each lane computes its row's delta once; the update then takes every row's from the
      // lanes that hold it.
      const float mine = dots(st, j), other = __shfl_xor_sync(kFull, mine, 1 << SH);
      const float pk = is_q ? other : mine, pq = is_q ? mine : other;
      const float d = g.beta * (st.v_at(j, rg + RPI * mr) - c * pk);
      const float dk_mine = d * inv_c;
      if (is_q && (cl & ((1 << SH) - 1)) == 0) o_row[t * o_stride] = f32_to_bf16_bits(c * pq + d * kq);
      float dk[ROWS];
#pragma unroll
      for (int r = 0; r < ROWS; ++r) dk[r] = __shfl_sync(kFull, dk_mine, (rg * LPR) | ((2 * r) << SH));
#pragma unroll
      for (int ch = 0; ch < NC; ++ch) {
        float kc[E];
        load_f32<E>(st.k32(j) + (cl + LPR * ch) * E, kc);
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
#pragma unroll
          for (int e = 0; e < E; ++e) s[r][ch * E + e] = fmaf(dk[r], kc[e], s[r][ch * E + e]);
      }
      if constexpr (std::is_void_v<Q>) {
        if (a.intermediate) store<M>(static_cast<TS*>(a.intermediate) + head_offset(a, b * a.T + t, h), c);
      } else if (a.intermediate) {
        const int64_t entry = ((b * a.T + t) * a.HV + h) * int64_t(a.V);  // the entry's first row
        store_codes<M>(static_cast<uint8_t*>(a.intermediate) + entry * kHeadK, a.intermediate_scale + entry, c);
      }
    }
  }

  // All T tokens of the warp's row, TC at a time through st (the first stage already started).
  template <class M>
  __device__ void run(const decode::Args& a, const Stage& st, const WarpGates& gates, const WarpTask& w, int TC,
                      int lane) {
    for (int t0 = 0; t0 < a.T; t0 += TC) {
      const int n = a.T - t0 < TC ? a.T - t0 : TC;
      if (t0 > 0) {
        __syncwarp();  // every lane is done reading the previous tokens
        st.start(a, w.b, w.hk, w.h, row0, t0, n, lane);
      }
      st.finish(n, a.l2norm, a.scale, lane);
      tokens<M>(a, st, gates, w.b, w.h, t0, n);
    }
  }
};

// Tokens staged at a time by the T-token vk kernel (its stage holds fp32 copies of k and q too).
constexpr int kVkStageTokens = 8;

// One warp per block: warps finish at different times, and a block's registers and shared memory
// are only freed when its last warp is done (H200, B = 128, T = 4: 139 us with 1 warp per block,
// 140 with 2, 142 with 4, 150 with 8 warps sharing one stage; kernels/step/README.md).
// MINW: resident warps per SM to budget registers for (16: 128 registers).
template <class TS, int ROWS, class M = InPlaceMem, int MINW = kTokensVkMinWarps>
__global__ void __launch_bounds__(32, MINW) step_vk_kernel(const decode::Args a) {
  using Tile = VkTile<TS, ROWS>;
  extern __shared__ uint4 smem_raw[];
  const int lane = threadIdx.x & 31;
  WarpTask w;
  if (!warp_task<1>(a, a.V / Tile::RPW, w)) return;
  Tile tile(lane, w.tile * Tile::RPW);
  const int TC = a.T < kVkStageTokens ? a.T : kVkStageTokens;
  const Stage st(smem_raw, TC, Tile::RPW, true);
  st.start(a, w.b, w.hk, w.h, tile.row0, 0, TC, lane);
  const WarpGateIn gate_in = load_gate_inputs(a, w.b, w.h, lane);

  if (w.slot < 0) {  // padding row: zero o (and the cache), touch no slot
    __pipeline_wait_prior(0);
    tile.zero_outputs(a, w.b, w.h, lane);
    return;
  }

  TS* pool = static_cast<TS*>(a.pool) + head_offset(a, w.slot, w.h);
  const TS* from = start_state<TS>(a, w.b, w.slot, w.h);
  uint4 raw[ROWS][Tile::NC];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int c = 0; c < Tile::NC; ++c) raw[r][c] = M::load16(from + tile.elem(r, c));
  const WarpGates gates = gates_of(a, gate_in, lane);
  tile.widen(raw);

  tile.template run<M>(a, st, gates, w, TC, lane);
  if (a.update_state) tile.template store<M>(pool, tile.lazy.c);
}

// ---- kv layout -------------------------------------------------------------------------------
// Geometry of a warp's kv tile (shared with decode_kv_kernel): LPK lanes per K row, each one
// 16-byte chunk of E columns; a warp covers CW = LPK * E columns and all K rows, NR consecutive
// rows per lane.
template <class TS, int LPK> struct KvGeom {
  using C = Chunk<TS>;
  static constexpr int E = C::E;           // columns per lane (one 16-byte chunk)
  static constexpr int CW = LPK * E;       // columns per warp
  static constexpr int RPI = 32 / LPK;     // K rows per load instruction (row groups)
  static constexpr int NR = kHeadK / RPI;  // consecutive K rows per lane
  static_assert(NR % 8 == 0, "k and q of a lane's rows are read 8 at a time");
};

template <class TS, int LPK, class M = InPlaceMem, int W = kWarps>
__global__ void __launch_bounds__(W * 32) step_kv_kernel(const decode::Args a) {
  using G = KvGeom<TS, LPK>;
  using C = typename G::C;
  constexpr int E = G::E, CW = G::CW, NR = G::NR;

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
  const TS* from = start_state<TS>(a, w.b, w.slot, w.h);
  uint4 raw[NR];
#pragma unroll
  for (int i = 0; i < NR; ++i) raw[i] = M::load16(from + elem(i));
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

}  // namespace gdn::step

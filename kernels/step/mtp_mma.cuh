// Multi-token verify (mtp) for the vk layout on tensor cores (mma.sync m16n8k16 bf16 with fp32
// accumulators, sm_80+; a TF32 form beside it, see apply_chunk), in the chunked (WY-like) form.
// step_vk_kernel spends three FMAs per state element per token and is compute-bound from T = 4
// up; here a chunk of C <= 8 tokens reads the state through two small GEMMs, so T = 2..16 costs
// about one pass over the state in registers.
//
// Work split: one warp owns 16 rows x 128 K of one (row b, value head h) state, held in 64 fp32
// registers as the accumulators of 16 n-tiles of 8 columns (lane 4g + t: rows g and g + 8), which
// are also the A fragments of 8 k-steps of 16. Per chunk:
//   1. P = S0 [k_1..k_C], Q = S0 [q_1..q_C] with the raw bf16 k, q (exact operands). S0 is split
//      into its bf16 rounding and the rounded remainder, one MMA each: 2^-18 relative per element
//      (the small x small term is not needed: k and q are exact). A bf16 MMA does twice the K of a
//      TF32 one in the same tensor-core time, so this costs half the TF32 split's. The Gram matrix
//      of the chunk's k and q comes from the same B fragments, one or two more MMAs per k-step,
//      and its diagonal gives the l2 norms (no separate pass over k and q).
//   2. A scalar recurrence on the dots per row (O(C^2), no divisions: strong decay underflows the
//      prefix products a division would need) gives the deltas d_m and the outputs.
//   3. S = A_C S0 + sum_m w_m k^_m (A_C: the chunk's decay product, w_m = d_m times the decays
//      after m): the state registers are the accumulator of MMAs with B = raw k and A = W split
//      like S0, its bf16 part in MMA-K 0..7 and the remainder in 8..15 (B repeats k): one MMA.
// The K order inside the MMAs is free (dot products don't care) as long as every operand uses
// the same permutation: ph() puts one 16-byte pool chunk in each lane.
#pragma once

#include <type_traits>

#include "common/ptx/mma_sync_bf16.cuh"
#include "common/ptx/mma_tf32.cuh"
#include "common/tf32_split.cuh"
#include "step/kernel.cuh"

namespace gdn::step {
namespace mma_vk {

constexpr int kRows = 16;            // state rows per warp: M of the MMA
constexpr int kSteps = kHeadK / 16;  // k-steps of 16 along K (2 n-tiles of 8 state columns each)
constexpr int kChunk = kMmaChunk;    // tokens per chunk: K of the state-update MMA
// Byte stride of the staged q/k vectors: the 8 vectors of one fragment load sit 256 + 32 bytes
// apart, on different banks (at the 512-byte stride of Stage they would be an 8-way conflict).
constexpr int kVecBytes = kHeadK * 2 + 32;

// Shared memory of one warp staging `tokens` tokens: k and q vectors, the chunk's Gram table
// [2][kChunk][kChunk] fp32, the v slices of the warp's rows, the norms (rk, rq).
__host__ __device__ constexpr int stage_bytes(int tokens) {
  return (tokens * (2 * kVecBytes + 2 * kRows + 8) + 2 * kChunk * kChunk * 4 + 15) / 16 * 16;
}

// Physical K index of logical column x (0, 1: 2t, 2t + 1; 2, 3: 2t + 8, 2t + 9) of k-step s in
// lane quad position t; KPG = k-steps per 16-byte pool chunk (1 for fp32, 2 for bf16), so that
// lane t's chunk j holds k-steps KPG j .. KPG j + KPG - 1.
template <int KPG> __device__ __forceinline__ constexpr int ph(int t, int s, int x) {
  return 16 * KPG * (s / KPG) + 4 * KPG * t + 4 * (s % KPG) + x;
}

// Per-warp staging area (the role of Stage, with the bank-friendly vector stride; the norms are
// written by apply_chunk).
struct TokenStage {
  char* base;
  int tokens;
  __device__ TokenStage(void* p, int tokens_) : base(static_cast<char*>(p)), tokens(tokens_) {}
  __device__ uint16_t* k(int j) const { return reinterpret_cast<uint16_t*>(base + j * kVecBytes); }
  __device__ uint16_t* q(int j) const { return reinterpret_cast<uint16_t*>(base + (tokens + j) * kVecBytes); }
  __device__ float* gram() const { return reinterpret_cast<float*>(base + 2 * tokens * kVecBytes); }
  __device__ uint16_t* v() const { return reinterpret_cast<uint16_t*>(gram() + 2 * kChunk * kChunk); }
  __device__ float2* norms() const { return reinterpret_cast<float2*>(v() + tokens * kRows); }  // rk, rq

  // Asynchronous copies of tokens [t0, t0 + n) of row b: k and q of q/k head hk, v[h][v0, v0 + 16).
  // Wait with wait(). Addresses step by one token (no 64-bit multiply per token).
  __device__ void start(const decode::Args& a, int64_t b, int hk, int h, int v0, int t0, int n, int lane) const {
    const int64_t row0 = b * a.T + t0, step = int64_t(a.H) * kHeadK;
    const uint16_t* src = (lane < 16 ? a.k : a.q) + (row0 * a.H + hk) * kHeadK + (lane & 15) * 8;
    char* dst = base + (lane < 16 ? 0 : tokens * kVecBytes) + (lane & 15) * 16;
    for (int j = 0; j < n; ++j, src += step, dst += kVecBytes) __pipeline_memcpy_async(dst, src, 16);
    if (lane < 2 * n) {
      const int j = lane >> 1, half = lane & 1;
      const uint16_t* vsrc = a.v + ((row0 + j) * a.HV + h) * a.V + v0 + half * 8;
      __pipeline_memcpy_async(v() + j * kRows + half * 8, vsrc, 16);
    }
    __pipeline_commit();
  }

  // Waits for start()'s copies. The norms are not computed here: apply_chunk takes them from the
  // diagonal of its Gram MMAs.
  __device__ void wait() const {
    __pipeline_wait_prior(0);
    __syncwarp();
  }
};

// The warp's 16 x 128 state tile: s[n-tile][accumulator register], n-tile 2s + y holding the
// logical columns 8y .. 8y + 7 of k-step s: c0 = (row g, x 2y), c1 = (g, x 2y + 1),
// c2 = (g + 8, x 2y), c3 = (g + 8, x 2y + 1). The A fragment of k-step s packs the same values:
// a0 = s[2s][0..1], a1 = s[2s][2..3], a2 = s[2s + 1][0..1], a3 = s[2s + 1][2..3].
template <class TS> struct Tile {
  using C = Chunk<TS>;
  static constexpr int KPG = C::E / 4;
  float s[2 * kSteps][4];

  // Element e of a lane's pool chunk j in row g + 8 r is logical column x = e % 4 of k-step
  // KPG j + e / 4: n-tile 2 k-step + x / 2, register 2 r + x % 2.
  __device__ static constexpr int ntile(int j, int e) { return 2 * (KPG * j + e / 4) + (e >> 1 & 1); }
  __device__ static constexpr int reg(int e, int r) { return 2 * r + (e & 1); }

  template <class M> __device__ void load(const TS* p, int g, int t) {
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int j = 0; j < kSteps / KPG; ++j) {
        float x[C::E];
        C::widen(M::load16(p + (g + 8 * r) * kHeadK + ph<KPG>(t, KPG * j, 0)), x);
#pragma unroll
        for (int e = 0; e < C::E; ++e) s[ntile(j, e)][reg(e, r)] = x[e];
      }
  }
  template <class M> __device__ void store(TS* p, int g, int t) const {
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int j = 0; j < kSteps / KPG; ++j) {
        float x[C::E];
#pragma unroll
        for (int e = 0; e < C::E; ++e) x[e] = s[ntile(j, e)][reg(e, r)];
        M::store16(p + (g + 8 * r) * kHeadK + ph<KPG>(t, KPG * j, 0), C::narrow(x));
      }
  }
};

// 8-bit pools (mtp_mma_8bit.cuh): a tile of code values, exact in bf16, with the rows' scales
// (rows g, g + 8): the state is diag(row_scale) times the tile until the first update.
struct ScaledTile : Tile<float> {
  float row_scale[2];
};

// (x0, x1) = big + rest as bf16x2 pairs: big rounded to bf16, rest = the rounded remainder
// (|x - big| <= 2^-9 |x| exactly in fp32, rounded again), so the pair carries x to 2^-18 |x|.
__device__ __forceinline__ void split_bf16x2(float x0, float x1, uint32_t& big, uint32_t& rest) {
  big = pack_bf16x2(x0, x1);
  rest = pack_bf16x2(x0 - bf16_lo(big), x1 - bf16_hi(big));
}

// The TF32 form (see apply_chunk): dev::split_tf32 (common/tf32_split.cuh).
using dev::split_tf32;

// One warp MMA of the chosen form: TF32 m16n8k8 or bf16 m16n8k16, fp32 accumulators.
template <bool TF32>
__device__ __forceinline__ void mma_form(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (TF32) ptx::mma_m16n8k8_tf32(d, a, b);
  else ptx::mma_m16n8k16_f32_bf16(d, a, b);
}

// N consecutive 32-bit words (8 or 16 bytes) of shared memory.
template <int N> __device__ __forceinline__ void lds_words(const uint16_t* p, uint32_t (&w)[N]) {
  if constexpr (N == 2) {
    const uint2 u = *reinterpret_cast<const uint2*>(p);
    w[0] = u.x, w[1] = u.y;
  } else {
    const uint4 u = *reinterpret_cast<const uint4*>(p);
    w[0] = u.x, w[1] = u.y, w[2] = u.z, w[3] = u.w;
  }
}

// One chunk of C tokens (stage slots c0.., global tokens tg0..) applied to the tile.
// NT: n-tiles of the dot MMAs (1: C <= 4, columns k_0..3 q_0..3; 2: k_0..7 | q_0..7).
// EXACT: the tile is exact in bf16 (a bf16 pool before its first update): no remainder MMAs.
// SPLIT: the dot and Gram MMAs accumulate into several independent fragments, summed at the end:
// one accumulator would chain all 16 MMAs of an n-tile, each waiting for the previous one.
// FULL: C == 4 NT, so every token test folds away (T = 8, 16: ~80 selects fewer per tile).
// UPDATE: step 3 runs (off: nothing reads the state after the chunk, see read_only_call).
// TF32: the same math on TF32 m16n8k8 MMAs, one per n-tile (k-step of 8) and operand half: twice
// the tensor-core time, but the pipelined kernel's update build measures 1-3 % faster with it from
// kMmaTf32FromHeads pairs on (plan.cpp). The n-tile accumulators are its A fragments
// permuted (a0 = c0, a1 = c2, a2 = c1, a3 = c3), and lane t's word y of a k-step holds the
// n-tile's K columns 2t, 2t + 1 as TF32 rows t, t + 4.
// CODES: the tile is a ScaledTile of code values (8-bit pools' first chunk, with EXACT): the dots
// are exact MMAs on the codes times the row's scale, and the update's A_C S0 is (a_C scale) codes.
template <class TS, int NT, bool EXACT, bool SPLIT, bool FULL = false, bool UPDATE = true, bool TF32 = false,
          bool CODES = false>
__device__ __forceinline__ void apply_chunk(Tile<TS>& tile, const decode::Args& a, const WarpTask& w, int row0,
                                            const TokenStage& st, const WarpGates& gates, int c0, int tg0, int C,
                                            int lane) {
  constexpr int KPG = Tile<TS>::KPG;
  constexpr int H = 4 * NT;  // first q column
  constexpr int MC = 4 * NT; // chunk tokens this instantiation handles
  if constexpr (FULL) C = MC;
  const int g = lane >> 2, t = lane & 3;
  float2* const nrm = st.norms() + c0;  // written below from the Gram diagonals, then read
  auto rk = [&](int tok) { return tok < C ? nrm[tok].x : 0.f; };
  auto rq = [&](int tok) { return tok < C ? nrm[tok].y : 0.f; };

  float ga[MC], gb[MC];  // decay, beta (1 and 0 past the chunk)
#pragma unroll
  for (int m = 0; m < MC; ++m) {
    const TokenGate x = gates.at(tg0 + m);
    ga[m] = m < C ? x.decay : 1.f;
    gb[m] = m < C ? x.beta : 0.f;
  }

  // ---- 1. dots with S0 and the Gram matrix. B column g of n-tile nt: k or q of one token.
  const uint16_t* bvec[NT];
  bool bok[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    const int col = 8 * nt + g, tok = col < H ? col : col - H;
    bok[nt] = tok < C;
    bvec[nt] = !bok[nt] ? st.k(c0) : col < H ? st.k(c0 + tok) : st.q(c0 + tok);
  }
  constexpr int NA = !SPLIT ? 1 : NT == 1 ? 4 : 2;  // accumulators per n-tile: [k-step parity][big, rest]
  constexpr int NG = SPLIT ? 2 : 1;
  float part[NT][NA][4] = {}, gpart[NG][4] = {}, qpart[4] = {};
  // The MMAs of one k-step (one of 8 K for TF32, of 16 for bf16) into accumulator parity par.
  auto dot_mmas = [&](const uint32_t(&big)[4], const uint32_t(&rest)[4], const uint32_t(&b)[NT][2], int par) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      mma_form<TF32>(part[nt][NA == 4 ? 2 * par : 0], big, b[nt]);
      if constexpr (!EXACT) mma_form<TF32>(part[nt][NA == 4 ? 2 * par + 1 : NA - 1], rest, b[nt]);
    }
    // Gram: rows = the B columns of the n-tiles (rows g + 8 = n-tile 1), columns = n-tile 0.
    const uint32_t ag[4] = {b[0][0], NT == 2 ? b[NT - 1][0] : 0u, b[0][1], NT == 2 ? b[NT - 1][1] : 0u};
    mma_form<TF32>(gpart[NG == 2 ? par : 0], ag, b[0]);
    // [k; q] . q^T: q_i . q_i on the diagonal of rows 8-15 (NT == 1 has q among the columns).
    if constexpr (NT == 2) mma_form<TF32>(qpart, ag, b[1]);
  };
#pragma unroll
  for (int j = 0; j < kSteps / KPG; ++j) {
    uint32_t wv[NT][2 * KPG];  // b0, b1 of k-steps KPG j ..
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      lds_words<2 * KPG>(bvec[nt] + ph<KPG>(t, KPG * j, 0), wv[nt]);
#pragma unroll
      for (int e = 0; e < 2 * KPG; ++e) wv[nt][e] = bok[nt] ? wv[nt][e] : 0u;
    }
#pragma unroll
    for (int e = 0; e < KPG; ++e) {
      const int ks = KPG * j + e;
      if constexpr (TF32) {
#pragma unroll
        for (int y = 0; y < 2; ++y) {
          const float* sv = tile.s[2 * ks + y];
          uint32_t b[NT][2];
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) b[nt][0] = wv[nt][2 * e + y] << 16, b[nt][1] = wv[nt][2 * e + y] & 0xffff0000u;
          const float av[4] = {sv[0], sv[2], sv[1], sv[3]};
          uint32_t big[4], rest[4];
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            if constexpr (EXACT) big[i] = __float_as_uint(av[i]);
            else split_tf32(av[i], big[i], rest[i]);
          }
          dot_mmas(big, rest, b, y);
        }
      } else {
        const float* s0 = tile.s[2 * ks];
        const float* s1 = tile.s[2 * ks + 1];
        uint32_t b[NT][2];
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) b[nt][0] = wv[nt][2 * e], b[nt][1] = wv[nt][2 * e + 1];
        uint32_t big[4], rest[4];
        if constexpr (EXACT) {
          big[0] = pack_bf16x2(s0[0], s0[1]), big[1] = pack_bf16x2(s0[2], s0[3]);
          big[2] = pack_bf16x2(s1[0], s1[1]), big[3] = pack_bf16x2(s1[2], s1[3]);
        } else {
          split_bf16x2(s0[0], s0[1], big[0], rest[0]), split_bf16x2(s0[2], s0[3], big[1], rest[1]);
          split_bf16x2(s1[0], s1[1], big[2], rest[2]), split_bf16x2(s1[2], s1[3], big[3], rest[3]);
        }
        dot_mmas(big, rest, b, ks & 1);
      }
    }
  }
  float acc[NT][4], gram[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      acc[nt][i] = part[nt][0][i];
#pragma unroll
      for (int p = 1; p < NA; ++p) acc[nt][i] += part[nt][p][i];
    }
    gram[i] = gpart[0][i];
#pragma unroll
    for (int p = 1; p < NG; ++p) gram[i] += gpart[p][i];
  }
  if constexpr (CODES) {  // S0 = diag(scale) codes: accumulator registers 0, 1 hold row g, 2, 3 row g + 8
    const float* rs = static_cast<const ScaledTile&>(tile).row_scale;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[nt][i] *= rs[i >> 1];
  }

  // ---- Norms of the chunk's tokens (docs/method.md 1: 1 / sqrt(x.x + eps), scale folded into rq)
  // from the Gram diagonals: lane (g, t = g / 2) holds column g of row g in gram[g % 2]; for
  // NT == 2 q.q is row g + 8 of qpart, for NT == 1 rows and columns are [k_0..3, q_0..3].
  if (t == (g >> 1)) {
    const bool y = g & 1;  // selects, not a dynamic index (that would put the arrays in local memory)
    auto r = [&](float xx) { return a.l2norm ? rsqrtf(xx + kL2NormEpsF) : 1.f; };
    const float diag = y ? gram[1] : gram[0];
    if constexpr (NT == 2) {
      if (g < C) nrm[g] = make_float2(r(diag), r(y ? qpart[3] : qpart[2]) * a.scale);
    } else if (g < 4) {
      if (g < C) nrm[g].x = r(diag);
    } else if (g - 4 < C) {
      nrm[g - 4].y = r(diag) * a.scale;
    }
  }
  // ---- Gram table G[nt][m][c]: coefficient of d_m in the update of the lane column (nt, c).
  float* G = st.gram();
  __syncwarp();  // the norms are written; the previous chunk's readers of G are done
#pragma unroll
  for (int y = 0; y < 2; ++y) {
    const int col = 2 * t + y;
    if constexpr (NT == 1) {  // rows and columns [k_0..3, q_0..3]; only k rows are read
      auto f = [&](int i) { return i < 4 ? rk(i) : rq(i - 4); };
      G[g * kChunk + col] = gram[y] * f(g) * f(col);
    } else {
      G[g * kChunk + col] = gram[y] * rk(g) * rk(col);                           // k_g . k_col
      G[(kChunk + col) * kChunk + g] = gram[2 + y] * rk(col) * rq(g);            // q_g . k_col
    }
  }
  __syncwarp();

  // ---- 2. recurrence. Lane (g, t) holds columns 8 nt + 2t + y of rows g (r 0) and g + 8 (r 1):
  // x = s.k^ (k columns) or s.q^ (q columns) of the current state s. tokq: the token of a q
  // column (final once the recurrence passes it), kChunk for k columns.
  float x[NT][2][2];
  int tokq[NT][2];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int y = 0; y < 2; ++y) {
      const int col = 8 * nt + 2 * t + y;
      const bool isq = col >= H;
      const int tok = isq ? col - H : col;
      const float f = isq ? rq(tok) : rk(tok);
      tokq[nt][y] = isq ? tok : kChunk;
#pragma unroll
      for (int r = 0; r < 2; ++r) x[nt][r][y] = acc[nt][2 * r + y] * f;
    }
  float wd[2][2] = {};  // d of tokens t and t + 4, rows g and g + 8
  const uint16_t* vs = st.v() + c0 * kRows;
#pragma unroll
  for (int m = 0; m < MC; ++m) {
    if (m >= C) break;
    // s.k^_m of row r sits in lane m / 2 of the quad, column parity m % 2 (k columns: n-tile 0).
    const int src = (lane & ~3) | (m >> 1);
    float d[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float dk = __shfl_sync(kFull, x[0][r][m & 1], src);
      d[r] = gb[m] * (bf16_lo(vs[m * kRows + g + 8 * r]) - ga[m] * dk);
      if (m < 4 && t == m) wd[0][r] = d[r];
      if (m >= 4 && t == m - 4) wd[1][r] = d[r];
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const float2 gm = *reinterpret_cast<const float2*>(G + (nt * kChunk + m) * kChunk + 2 * t);
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        if (tokq[nt][0] >= m) x[nt][r][0] = fmaf(ga[m], x[nt][r][0], d[r] * gm.x);
        if (tokq[nt][1] >= m) x[nt][r][1] = fmaf(ga[m], x[nt][r][1], d[r] * gm.y);
      }
    }
  }
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int y = 0; y < 2; ++y)
      if (tokq[nt][y] < C) {
        uint16_t* o = a.o + ((w.b * a.T + tg0 + tokq[nt][y]) * a.HV + w.h) * a.V + row0 + g;
        o[0] = f32_to_bf16_bits(x[nt][0][y]);
        o[8] = f32_to_bf16_bits(x[nt][1][y]);
      }

  // ---- 3. S = A_C S0 + W K, W[row][m] = d_m rk_m prod_{i > m} a_i (suffix products: no division).
  if constexpr (!UPDATE) return;
  float ac = 1.f, suf[2] = {1.f, 1.f};
#pragma unroll
  for (int m = 0; m < MC; ++m) {
    ac *= ga[m];
    if (m > t) suf[0] *= ga[m];
    if (m > t + 4) suf[1] *= ga[m];
  }
  // A fragment, MMA-K 2t + i = token t + 4i (the K order is free), 8 + 2t + i its remainder:
  // a0 = W(g, t | t + 4), a1 = the same for row g + 8, a2, a3 = their remainders.
  uint32_t wa[4], wbig[4], wrest[4];  // TF32: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4)
  {
    const float f[2] = {suf[0] * rk(t), suf[1] * rk(t + 4)};
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      if constexpr (TF32) {
#pragma unroll
        for (int i = 0; i < 2; ++i) split_tf32(wd[i][r] * f[i], wbig[2 * i + r], wrest[2 * i + r]);
      } else {
        split_bf16x2(wd[0][r] * f[0], wd[1][r] * f[1], wa[r], wa[2 + r]);
      }
    }
  }
  // B: b0 = b1 = (k_t, k_{t+4}) at state column g of the n-tile: n-tile 2s + y is logical
  // column 8y + g of k-step s = physical ph(g / 2, s, 2y + g % 2), bf16 half g % 2 of word 2y.
  const uint16_t* kb[2];
  bool kok[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) kok[i] = t + 4 * i < C, kb[i] = st.k(c0 + (kok[i] ? t + 4 * i : 0));
  const uint32_t half_sel = (g & 1) ? 0x7632u : 0x5410u;  // byte_perm: half g % 2 of each word
  const uint32_t tf32_sel = (g & 1) ? 0x3244u : 0x1044u;  // byte_perm: half g % 2 -> high half
#pragma unroll
  for (int j = 0; j < kSteps / KPG; ++j) {
    uint32_t kw[2][2 * KPG];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      lds_words<2 * KPG>(kb[i] + ph<KPG>(g >> 1, KPG * j, 0), kw[i]);
#pragma unroll
      for (int e = 0; e < 2 * KPG; ++e) kw[i][e] = kok[i] ? kw[i][e] : 0u;
    }
#pragma unroll
    for (int e = 0; e < 2 * KPG; ++e) {
      float* sv = tile.s[2 * KPG * j + e];
      float d[4] = {ac * sv[0], ac * sv[1], ac * sv[2], ac * sv[3]};
      if constexpr (CODES) {  // rows g, g + 8: (a_C scale) times the code value
        const float* rs = static_cast<const ScaledTile&>(tile).row_scale;
        const float a0 = ac * rs[0], a1 = ac * rs[1];
        d[0] = a0 * sv[0], d[1] = a0 * sv[1], d[2] = a1 * sv[2], d[3] = a1 * sv[3];
      }
      if constexpr (TF32) {
        const uint32_t b[2] = {__byte_perm(kw[0][e], 0u, tf32_sel), __byte_perm(kw[1][e], 0u, tf32_sel)};
        ptx::mma_m16n8k8_tf32(d, wbig, b);
        ptx::mma_m16n8k8_tf32(d, wrest, b);
      } else {
        const uint32_t bw = __byte_perm(kw[0][e], kw[1][e], half_sel);
        const uint32_t b[2] = {bw, bw};
        ptx::mma_m16n8k16_f32_bf16(d, wa, b);
      }
      sv[0] = d[0], sv[1] = d[1], sv[2] = d[2], sv[3] = d[3];
    }
  }
}

// The n staged tokens (global tokens t0 ..) applied to the tile in chunks of kChunk. READ_ONLY:
// a read_only_call, whose state is not updated: one chunk and no loop, since a loop around a
// tile that does not change lets the compiler hoist its bf16 split out of the loop, 64 more
// live registers (the plain kernel spilled 154 bytes that way).
template <class TS, bool SPLIT, bool READ_ONLY = false, bool TF32 = false>
__device__ __forceinline__ void apply_staged(Tile<TS>& tile, const decode::Args& a, const WarpTask& w, int row0,
                                             const TokenStage& st, const WarpGates& gates, int t0, int n, int lane) {
  for (int c0 = 0; c0 < n; c0 += kChunk) {
    const int C = READ_ONLY || n - c0 < kChunk ? n - c0 : kChunk;
    auto chunk = [&](auto exact) {
      constexpr bool E = decltype(exact)::value;
      constexpr bool U = !READ_ONLY;
      if (C == kChunk) apply_chunk<TS, 2, E, SPLIT, true, U, TF32>(tile, a, w, row0, st, gates, c0, t0 + c0, C, lane);
      else if (C > 4) apply_chunk<TS, 2, E, SPLIT, false, U, TF32>(tile, a, w, row0, st, gates, c0, t0 + c0, C, lane);
      else apply_chunk<TS, 1, E, SPLIT, false, U, TF32>(tile, a, w, row0, st, gates, c0, t0 + c0, C, lane);
    };
    // A bf16 pool is exact in bf16 until the first update.
    if (std::is_same_v<TS, uint16_t> && t0 == 0 && c0 == 0) chunk(std::true_type{});
    else chunk(std::false_type{});
    if constexpr (READ_ONLY) break;  // one chunk (a loop-free rewrite compiled to another, unmeasured schedule)
  }
}

// The call's tokens in stages of TC (the first already started): apply(t0, n) once each has landed.
// step_vk_mma_kernel keeps its own copy of this loop: written through this helper, its PTX
// allocates the gate loads' registers in another order.
template <class F>
__device__ __forceinline__ void for_each_stage(const decode::Args& a, const WarpTask& w, int row0, const TokenStage& st,
                                               int TC, int lane, F&& apply) {
  for (int t0 = 0; t0 < a.T; t0 += TC) {
    const int n = a.T - t0 < TC ? a.T - t0 : TC;
    if (t0 > 0) {
      __syncwarp();  // every lane is done with the previous tokens
      st.start(a, w.b, w.hk, w.h, row0, t0, n, lane);
    }
    st.wait();
    apply(t0, n);
  }
}

// Padding row: o of every token is zero; no slot is touched.
__device__ __forceinline__ void zero_o(const decode::Args& a, const WarpTask& w, int row0, int lane) {
  for (int t = 0; t < a.T; ++t)
    if (lane < kRows) a.o[((w.b * a.T + t) * a.HV + w.h) * a.V + row0 + lane] = 0;
}

}  // namespace mma_vk

// K = 128, V % 16 == 0, bf16 q/k/v, fp32 or bf16 (uint16_t) pool, T in 1..64, no intermediate
// cache. Grid: one warp per (row, value head, 16 rows), W warps per block, no block barriers.
// MINW: resident warps per SM to budget registers for (12: 168 registers, 16: 128). READ_ONLY:
// the build for read_only_call calls.
template <class TS, class M = InPlaceMem, int W = 4, int MINW = kMmaMinWarps, bool SPLIT = true, bool READ_ONLY = false>
__global__ void __launch_bounds__(W * 32, MINW / W) step_vk_mma_kernel(const decode::Args a) {
  using namespace mma_vk;
  extern __shared__ uint4 smem_raw[];
  const int lane = threadIdx.x & 31;
  WarpTask w;
  if (!warp_task<W>(a, a.V / kRows, w)) return;
  const int row0 = w.tile * kRows;
  const int TC = a.T < kStageTokens ? a.T : kStageTokens;
  const TokenStage st(reinterpret_cast<char*>(smem_raw) + (threadIdx.x >> 5) * stage_bytes(TC), TC);
  st.start(a, w.b, w.hk, w.h, row0, 0, TC, lane);

  if (w.slot < 0) {
    __pipeline_wait_prior(0);
    zero_o(a, w, row0, lane);
    return;
  }

  TS* pool = static_cast<TS*>(a.pool) + head_offset(a, w.slot, w.h) + int64_t(row0) * kHeadK;
  Tile<TS> tile;
  tile.template load<M>(pool, lane >> 2, lane & 3);
  const WarpGates gates = load_gates(a, w.b, w.h, lane);

  if constexpr (READ_ONLY) {  // T <= kChunk: one stage, one chunk (see apply_staged)
    st.wait();
    apply_staged<TS, SPLIT, true>(tile, a, w, row0, st, gates, 0, a.T, lane);
  } else {
    for (int t0 = 0; t0 < a.T; t0 += TC) {
      const int n = a.T - t0 < TC ? a.T - t0 : TC;
      if (t0 > 0) {
        __syncwarp();  // every lane is done with the previous tokens
        st.start(a, w.b, w.hk, w.h, row0, t0, n, lane);
      }
      st.wait();
      apply_staged<TS, SPLIT, false>(tile, a, w, row0, st, gates, t0, n, lane);
    }
    if (a.update_state) tile.template store<M>(pool, lane >> 2, lane & 3);
  }
}

}  // namespace gdn::step

// The state-dependent half of a chunk, per warp. Warp w owns 16 value columns of the CTA's block
// (lc = 16 w) and keeps their slice of the state, transposed, in fp32 registers for the whole
// sequence: s = S^T[16 columns][128 head dims], the accumulator tiles of an m16 x n128 product.
// Everything below is a product with S^T or with a row-scaled accumulator as the A operand, so
// the state never leaves the registers and the chain needs no barrier with other warps:
//   U^T   = S^T K^T,  (Q S)^T = S^T Q^T                   B from the k / q tiles
//   W^T   = V^T - U^T diag(ek)                           V^T from the v tile (ldmatrix.trans)
//   V_d^T = W^T A_g^T                                    (V_d = A_g W = U' of docs/method.md A.1)
//   O^T   = (Q S)^T diag(eq) + V_d^T P_g^T
//   S^T   = e^G S^T + (V_d^T diag(eu)) K                 B from the k tile (ldmatrix.trans)
// ek, eq, eu fold the L2 norms, e^gam, e^(G - gam) and the scale (chunk_prep.cuh); A_g and P_g
// are lower triangular, so their k-steps above the diagonal are skipped.
#pragma once

#include <cstdint>

#include "common/gdn_math.cuh"
#include "common/ptx/ldmatrix.cuh"
#include "prefill/sm90/stmatrix.cuh"
#include "prefill/op.h"
#include "prefill/sm90/fragments.cuh"
#include "prefill/sm90/smem_layout.h"
#include "prefill/sm90/state_columns.cuh"
#include "prefill/sm90/states.cuh"

namespace gdn::sm90 {

// Kern: the scan's layout (smem_layout.h: kScanKernel, or kScan2Kernel with two stages).
template <class In, int BV, int Kern = kScanKernel> struct StateWarp {
  // s[nt][e]: value column lc + g + 8 (e / 2), head dim 8 nt + 2t + (e % 2).
  float s[kHeadDim / 8][4];
  int lane = 0, lc = 0;

  // The warp's columns of the state at r (state_ref.cuh: zeros when r is null), the CTA's
  // columns starting at value column vcol0 of r.
  __device__ __forceinline__ void load(const StateRef& r, int vcol0) { load_state_columns(r, s, lane, vcol0 + lc + (lane >> 2)); }
  // Columns vcol0 + lc .. of the identity (context parallelism's transition pass: the state
  // map's K x K matrix is the end state of the identity with v = 0).
  __device__ __forceinline__ void load_identity(int vcol0) {
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int nt = 0; nt < kHeadDim / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[nt][e] = 8 * nt + 2 * t + (e & 1) == vcol0 + lc + g + 8 * (e >> 1) ? 1.f : 0.f;
  }
  // The warp's columns into r (nothing when r is null; bf16 rounds to nearest even).
  __device__ __forceinline__ void store(const StateRef& r, int vcol0) const {
    store_state_columns(r, s, lane, vcol0 + lc + (lane >> 2));
  }

  // acc += src m^T over the chunk's 64 tokens, src as accumulator tiles (rounded to f16 for the
  // A operand), m a [64][64] f16 tile, lower triangular (m[i][j] = 0 for j > i): token k-step kk
  // meets output tiles 2 np, 2 np + 1 only for np >= kk.
  // m_lane: the tile's shared address plus b_lane(lane) (lane_offsets.h).
  __device__ __forceinline__ void times_lower_transposed(float (&acc)[8][4], const float (&src)[8][4],
                                                         uint32_t m_lane) const {
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      uint32_t a[4];
      acc_to_a(src[2 * kk], src[2 * kk + 1], a);
      const uint32_t row_kk = m_lane ^ xor_of(kk);
#pragma unroll
      for (int np = kk; np < 4; ++np) {
        uint32_t b[4];
        ptx::ldmatrix_x4(b, row_kk + uint32_t(np) * 2048);
        mma(acc[2 * np], a, b[0], b[1]);
        mma(acc[2 * np + 1], a, b[2], b[3]);
      }
    }
  }

  // The chunk's ek, eq and eu vectors (chunk_prep.cuh) in buffer `buf`.
  struct Vectors {
    const float *ek, *eq, *eu;
  };
  static __device__ __forceinline__ Vectors vectors(const uint8_t* smem, int buf) {
    constexpr SmemLayout L(BV, Kern);
    const float* sc = reinterpret_cast<const float*>(smem + L.scalars(buf));
    return {sc + kEk * kChunk, sc + kEq * kChunk, sc + kEu * kChunk};
  }

  // W^T = V^T - U^T diag(ek), w holding U^T. ldmatrix.trans of tokens 16 np.. x columns lc..:
  // vtr[0] / vtr[1] are rows g of tiles 2 np / 2 np + 1, vtr[2] / vtr[3] their rows g + 8.
  __device__ __forceinline__ void subtract_from_v(float (&w)[8][4], const uint8_t* vt, const float* ek) const {
    constexpr int VR = v_row_elems(BV);
    const int t = lane & 3;
#pragma unroll
    for (int np = 0; np < 4; ++np) {
      uint32_t vtr[4];
      const RowCol vr = bt_rows(lane, 16 * np, lc);
      ptx::ldmatrix_x4_trans(vtr, vt + (vr.row * VR + vr.col) * 2);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int nt = 2 * np + half, i0 = 8 * nt + 2 * t;
        const float e0 = ek[i0], e1 = ek[i0 + 1];
        w[nt][0] = fmaf(-e0, w[nt][0], dev::lo16<In>(vtr[half]));
        w[nt][1] = fmaf(-e1, w[nt][1], dev::hi16<In>(vtr[half]));
        w[nt][2] = fmaf(-e0, w[nt][2], dev::lo16<In>(vtr[2 + half]));
        w[nt][3] = fmaf(-e1, w[nt][3], dev::hi16<In>(vtr[2 + half]));
      }
    }
  }
  // acc = acc diag(e): accumulator tiles over the chunk's tokens (columns), each scaled by its
  // token's entry of e.
  __device__ __forceinline__ void scale_tokens(float (&acc)[8][4], const float* e) const {
    const int t = lane & 3;
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
      const int i0 = 8 * nt + 2 * t;
      const float e0 = e[i0], e1 = e[i0 + 1];
      acc[nt][0] *= e0, acc[nt][1] *= e1, acc[nt][2] *= e0, acc[nt][3] *= e1;
    }
  }
  // S^T = e^G S^T: the chunk's decay of the whole state (buffer `buf`'s e^G).
  __device__ __forceinline__ void decay(const uint8_t* smem, int buf) {
    constexpr SmemLayout L(BV, Kern);
    const float eG = *reinterpret_cast<const float*>(smem + L.exp_G(buf));
#pragma unroll
    for (int nt = 0; nt < kHeadDim / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[nt][e] *= eG;
  }

  // The update's A operand of token k-step kk: (V_d^T diag(eu)), rounded.
  __device__ __forceinline__ void update_operand(const float (&vd)[8][4], const float* eu, int kk, uint32_t (&ap)[4]) const {
    const int t = lane & 3;
    float p[2][4];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int nt = 2 * kk + half, j0 = 8 * nt + 2 * t;
      const float e0 = eu[j0], e1 = eu[j0 + 1];
      p[half][0] = vd[nt][0] * e0, p[half][1] = vd[nt][1] * e1, p[half][2] = vd[nt][2] * e0, p[half][3] = vd[nt][3] * e1;
    }
    acc_to_a(p[0], p[1], ap);
  }

  // o: rounded into this warp's own columns of the v stage (its v is consumed) by four transposing
  // stmatrix (matrix m of pair p: tokens 16 p + 8 (m / 2) .., value columns 8 (m % 2) ..; lane l
  // gives row l % 8 of matrix l / 8), then each valid token's 32 bytes copied out in two 16-byte
  // stores.
  __device__ __forceinline__ void store_o(const float (&o)[8][4], uint8_t* vt, int rows, int64_t row0,
                                          const prefill::Args& a, int h, int vcol0) const {
    constexpr int VR = v_row_elems(BV);
    uint16_t* ov = reinterpret_cast<uint16_t*>(vt) + lc;
    const int m = lane >> 3;
    const uint32_t at = smem_u32(ov + ((m >> 1) * 8 + (lane & 7)) * VR + 8 * (m & 1));
    auto pack = [](float lo, float hi) { return uint32_t(to_bits<In>(lo)) | uint32_t(to_bits<In>(hi)) << 16; };
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      const uint32_t r[4] = {pack(o[2 * p][0], o[2 * p][1]), pack(o[2 * p][2], o[2 * p][3]), pack(o[2 * p + 1][0], o[2 * p + 1][1]),
                             pack(o[2 * p + 1][2], o[2 * p + 1][3])};
      ptx::stmatrix_x4_trans_tile(at + uint32_t(p * 16 * VR * 2), uint32_t(VR * 2), r);
    }
    __syncwarp();
    for (int e = lane; e < 2 * rows; e += 32) {
      const int r = e >> 1, half = e & 1;
      const uint4 val = *reinterpret_cast<const uint4*>(ov + r * VR + 8 * half);
      *reinterpret_cast<uint4*>(a.o + ((row0 + r) * a.HV + h) * kHeadDim + vcol0 + lc + 8 * half) = val;
    }
  }

  // One chunk of `rows` valid tokens starting at packed row row0, from stage `stage` and the
  // preparation's buffer `buf`; writes o (kOut), else only advances the state (context
  // parallelism's transition pass: no (Q S)^T, no O).
  // among_first runs between the first and the second k-step of U^T and (Q S)^T: the state still
  // holds the chunk's start (the checkpoint twin stores the previous chunk's checkpoint there, its
  // stores among the products).
  struct Nothing {
    __device__ __forceinline__ void operator()() const {}
  };
  // after_q runs once the chunk's q has been read for the last time (kScanQ1Kernel's scan tells
  // its load warps that the q tile is free).
  template <bool kOut = true, class AmongFirst = Nothing, class AfterQ = Nothing>
  __device__ __forceinline__ void chunk(uint8_t* smem, int stage, int buf, int rows, int64_t row0, const prefill::Args& a,
                                        int h, int vcol0, const AmongFirst& among_first = {}, const AfterQ& after_q = {}) {
    constexpr SmemLayout L(BV, Kern);
    const uint32_t s0 = smem_u32(smem), bl = b_lane(lane);
    const uint32_t k_b = s0 + L.k(stage) + bl, q_b = s0 + L.q(stage) + bl, k_bt = s0 + L.k(stage) + bt_lane(lane);
    uint8_t* vt = smem + L.v(stage);
    const auto [ek, eq, eu] = vectors(smem, buf);

    // U^T and (Q S)^T over the 8 k-steps of the head dim; w holds U^T, then W^T.
    float w[8][4], o[8][4];
    zero(w);
    zero(o);
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) {
      uint32_t as[4];
      acc_to_a(s[2 * kk], s[2 * kk + 1], as);
      const uint32_t k_kk = (k_b ^ xor_of(kk)) + half_of(kk), q_kk = (q_b ^ xor_of(kk)) + half_of(kk);
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        uint32_t bk[4], bq[4];
        ptx::ldmatrix_x4(bk, k_kk + uint32_t(np) * 2048);
        if constexpr (kOut) ptx::ldmatrix_x4(bq, q_kk + uint32_t(np) * 2048);
        mma(w[2 * np], as, bk[0], bk[1]);
        mma(w[2 * np + 1], as, bk[2], bk[3]);
        if constexpr (kOut) {
          mma(o[2 * np], as, bq[0], bq[1]);
          mma(o[2 * np + 1], as, bq[2], bq[3]);
        }
      }
      if (kk == 0) among_first();
    }
    after_q();
    subtract_from_v(w, vt, ek);
    // V_d^T = W^T A_g^T.
    float vd[8][4];
    zero(vd);
    times_lower_transposed(vd, w, s0 + L.ag(buf) + bl);
    // O^T = (Q S)^T diag(eq) + V_d^T P_g^T.
    if constexpr (kOut) {
      scale_tokens(o, eq);
      times_lower_transposed(o, vd, s0 + L.pg(buf) + bl);
    }
    // S^T = e^G S^T + (V_d^T diag(eu)) K; eu is 0 past the last valid token.
    decay(smem, buf);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      uint32_t ap[4];
      update_operand(vd, eu, kk, ap);
#pragma unroll
      for (int np = 0; np < kHeadDim / 16; ++np) {
        uint32_t b[4];
        ptx::ldmatrix_x4_trans(b, ((k_bt ^ xor_of(np)) + half_of(np)) + uint32_t(kk) * 2048);
        mma(s[2 * np], ap, b[0], b[1]);
        mma(s[2 * np + 1], ap, b[2], b[3]);
      }
    }
    if constexpr (kOut) store_o(o, vt, rows, row0, a, h, vcol0);
  }
};

}  // namespace gdn::sm90

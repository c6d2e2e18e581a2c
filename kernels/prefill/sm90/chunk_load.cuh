// Staging of one 64-token chunk into a shared-memory stage (smem_layout.h): q and k rows of the
// CTA's q/k head, v rows of its value columns, by 16-byte cp.async; rows past the end of the
// sequence are zero-filled, so a partial last chunk computes as a full one with k = q = v = 0.
// The gate of the chunk's tokens is loaded into registers of threads 0..63 one chunk ahead
// (dev::load_gate keeps the raw words; the math happens in chunk_prep.cuh).
// The first step toward the fused design: a TMA copy per tile into the same swizzled layout.
#pragma once

#include <cstdint>

#include "common/gdn_math.cuh"
#include "common/ptx/cp_async.cuh"
#include "prefill/op.h"
#include "prefill/sm90/fragments.cuh"
#include "prefill/sm90/smem_layout.h"

namespace gdn::sm90 {

// q and k rows [row0, row0 + rows) of the packed batch (rows >= 1, q/k head hk) into stage
// `stage`, issued by NT threads, this one being tid. Offsets are 64-bit.
template <int BV, int Ver, int NT>
__device__ __forceinline__ void load_qk(uint8_t* smem, int stage, const prefill::Args& a, int64_t row0, int rows, int hk,
                                        int tid) {
  constexpr SmemLayout L(BV, Ver);
  uint8_t* qs = smem + L.q(stage);
  uint8_t* ks = smem + L.k(stage);
  constexpr int kRowPieces = kHeadDim / 8;  // 16-byte pieces of a q/k row
  for (int e = tid; e < kChunk * kRowPieces; e += NT) {
    const int r = e / kRowPieces, c = e % kRowPieces;
    const bool valid = r < rows;
    const int64_t off = ((row0 + (valid ? r : 0)) * a.H + hk) * kHeadDim + c * 8;
    ptx::cp_async_16_zfill(qs + qk_offset(r, c * 8), a.q + off, valid);
    ptx::cp_async_16_zfill(ks + qk_offset(r, c * 8), a.k + off, valid);
  }
}

// The v rows of value head h, value columns vcol0 .. vcol0 + BV, into stage `stage`.
template <int BV, int Ver, int NT>
__device__ __forceinline__ void load_v(uint8_t* smem, int stage, const prefill::Args& a, int64_t row0, int rows, int h,
                                       int vcol0, int tid) {
  constexpr SmemLayout L(BV, Ver);
  uint8_t* vs = smem + L.v(stage);
  constexpr int kVPieces = BV / 8;
  for (int e = tid; e < kChunk * kVPieces; e += NT) {
    const int r = e / kVPieces, c = e % kVPieces;
    const bool valid = r < rows;
    const int64_t off = ((row0 + (valid ? r : 0)) * a.HV + h) * kHeadDim + vcol0 + c * 8;
    ptx::cp_async_16_zfill(vs + (r * v_row_elems(BV) + c * 8) * 2, a.v + off, valid);
  }
}

// Both of the above: the chunk's q, k and v.
template <int BV, int Ver, int NT>
__device__ __forceinline__ void load_chunk(uint8_t* smem, int stage, const prefill::Args& a, int64_t row0, int rows,
                                           int hk, int h, int vcol0, int tid) {
  load_qk<BV, Ver, NT>(smem, stage, a, row0, rows, hk, tid);
  load_v<BV, Ver, NT>(smem, stage, a, row0, rows, h, vcol0, tid);
}

// The gate words of token tid of the chunk at row0 (threads past `rows` keep `prev`).
__device__ __forceinline__ dev::GateIn load_chunk_gate(const GateArgs& ga, int64_t row0, int rows, int h, int HV,
                                                       const dev::GateIn& prev, int tid) {
  return tid < rows ? dev::load_gate(ga, row0 + tid, h, HV) : prev;
}

}  // namespace gdn::sm90

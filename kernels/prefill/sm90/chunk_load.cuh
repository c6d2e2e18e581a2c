// Staging of one 64-token chunk into a shared-memory stage (smem_layout.h): q and k rows of the
// CTA's q/k head, v rows of its value columns, by 16-byte cp.async; rows past the end of the
// sequence are zero-filled, so a partial last chunk computes as a full one with k = q = v = 0.
// The gate of the chunk's tokens is loaded into registers of threads 0..63 one chunk ahead
// (dev::load_gate keeps the raw words; the math happens in chunk_prep.cuh).
// The swizzle is the one a TMA copy with SWIZZLE_128B writes, so a TMA copy per tile could replace these.
#pragma once

#include <cstdint>

#include "common/gdn_math.cuh"
#include "common/ptx/cp_async.cuh"
#include "prefill/op.h"
#include "prefill/sm90/fragments.cuh"
#include "prefill/sm90/smem_layout.h"

namespace gdn::sm90 {

// q and k rows [row0, row0 + rows) of the packed batch (rows >= 1, q/k head hk) into stage
// `stage`, issued by NT threads, this one being tid. Offsets are 64-bit. kQ false: k only (the
// transition pass has no (Q S)^T and no o).
template <int BV, int Kern, int NT, bool kQ = true>
__device__ __forceinline__ void load_qk(uint8_t* smem, int stage, const prefill::Args& a, int64_t row0, int rows, int hk,
                                        int tid) {
  static_assert(NT % 128 == 0, "a thread keeps one 16-byte column piece and a row residue mod 8");
  constexpr SmemLayout L(BV, Kern);
  constexpr int kRowPieces = kHeadDim / 8, kRowsPerPass = NT / kRowPieces;  // 16-byte pieces of a q/k row
  // Thread tid copies piece c of rows r0, r0 + kRowsPerPass, ...: the same swizzle residue, so
  // the shared offsets differ by constants, and the global ones by a multiple of a row.
  const int c = tid % kRowPieces, r0 = tid / kRowPieces;
  const uint32_t s_at = smem_u32(smem) + qk_offset(r0, c * 8);
  const int64_t row_elems = int64_t(a.H) * kHeadDim;
  const uint16_t* q = a.q + (row0 * a.H + hk) * kHeadDim + c * 8;
  const uint16_t* k = a.k + (row0 * a.H + hk) * kHeadDim + c * 8;
#pragma unroll
  for (int m = 0; m < kChunk / kRowsPerPass; ++m) {
    const int r = r0 + m * kRowsPerPass;
    const bool valid = r < rows;
    const int64_t off = valid ? r * row_elems : 0;
    const uint32_t dst = s_at + uint32_t(m * kRowsPerPass * 128);
    if constexpr (kQ) ptx::cp_async_16_zfill(dst + L.q(stage), q + off, valid);
    ptx::cp_async_16_zfill(dst + L.k(stage), k + off, valid);
  }
}

// The v rows of value head h, value columns vcol0 .. vcol0 + BV, into stage `stage`.
template <int BV, int Kern, int NT>
__device__ __forceinline__ void load_v(uint8_t* smem, int stage, const prefill::Args& a, int64_t row0, int rows, int h,
                                       int vcol0, int tid) {
  constexpr SmemLayout L(BV, Kern);
  constexpr int kVPieces = BV / 8, kRowsPerPass = NT / kVPieces;
  static_assert(NT % kVPieces == 0 && kChunk % kRowsPerPass == 0, "whole rows per pass");
  const int c = tid % kVPieces, r0 = tid / kVPieces;
  const uint32_t s_at = smem_u32(smem) + L.v(stage) + uint32_t((r0 * v_row_elems(BV) + c * 8) * 2);
  const int64_t row_elems = int64_t(a.HV) * kHeadDim;
  const uint16_t* v = a.v + (row0 * a.HV + h) * kHeadDim + vcol0 + c * 8;
#pragma unroll
  for (int m = 0; m < kChunk / kRowsPerPass; ++m) {
    const int r = r0 + m * kRowsPerPass;
    const bool valid = r < rows;
    ptx::cp_async_16_zfill(s_at + uint32_t(m * kRowsPerPass * v_row_elems(BV) * 2), v + (valid ? r * row_elems : 0), valid);
  }
}

// The gate words of token tid of the chunk at row0 (threads past `rows` keep `prev`).
__device__ __forceinline__ dev::GateIn load_chunk_gate(const GateArgs& ga, int64_t row0, int rows, int h, int HV,
                                                       const dev::GateIn& prev, int tid) {
  return tid < rows ? dev::load_gate(ga, row0 + tid, h, HV) : prev;
}

}  // namespace gdn::sm90

// What one CTA of a prefill/sm90 kernel works on: its (value-column block, value head, sequence)
// from the one-dimensional grid, ordered V-block fastest (CTAs sharing a head's q/k are
// neighbours in L2), the sequence's packed rows and its 64-token chunks.
#pragma once

#include <cstdint>

#include "prefill/op.h"
#include "prefill/sm90/smem_layout.h"

namespace gdn::sm90 {

struct CtaWork {
  int h = 0, hk = 0, vcol0 = 0, chunks = 0;
  int64_t n = 0, bos = 0, len = 0;  // len 0 for a repeated cu_seqlens entry: ht = h0, no o

  __device__ __forceinline__ static CtaWork of(const prefill::Args& a, int v_blocks, int block_v) {
    CtaWork w;
    const int64_t cta = blockIdx.x;
    const int vb = int(cta % v_blocks);
    w.h = int((cta / v_blocks) % a.HV);
    w.n = cta / v_blocks / a.HV;
    w.hk = w.h / (a.HV / a.H);
    w.vcol0 = vb * block_v;
    w.bos = a.cu_seqlens[w.n];
    w.len = a.cu_seqlens[w.n + 1] - w.bos;
    w.chunks = int((w.len + kChunk - 1) / kChunk);
    return w;
  }
  // Valid tokens of chunk c (kChunk but for the last).
  __device__ __forceinline__ int rows_of(int c) const {
    return int(len - int64_t(c) * kChunk < kChunk ? len - int64_t(c) * kChunk : kChunk);
  }
  // Packed row of chunk c's first token.
  __device__ __forceinline__ int64_t row0_of(int c) const { return bos + int64_t(c) * kChunk; }
};

}  // namespace gdn::sm90

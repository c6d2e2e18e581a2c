// What one CTA of the scan or the fused kernel works on: its (value-column block, value head,
// segment) from the one-dimensional grid, ordered V-block fastest (CTAs sharing a head's q/k are
// neighbours in L2), the sequence's packed rows and the segment's 64-token chunks. Without
// context parallelism (seg_chunks 0, the fused kernel always) a segment is a whole sequence.
#pragma once

#include <cstdint>

#include "prefill/op.h"
#include "prefill/sm90/segments.h"
#include "prefill/sm90/smem_layout.h"

namespace gdn::sm90 {

struct CtaWork {
  int h = 0, hk = 0, vcol0 = 0, chunks = 0;  // chunks: the sequence's
  int c_begin = 0, c_end = 0;                // the segment's chunks [c_begin, c_end)
  int64_t n = 0, bos = 0, len = 0;           // len 0 for a repeated cu_seqlens entry: ht = h0, no o
  int64_t slot = 0, seg = 0, segs = 1;       // segment slot (segments.h), index and count
  bool valid = true;                         // false for a slot between two sequences (nothing else holds then)

  __device__ __forceinline__ static CtaWork of(const prefill::Args& a, int v_blocks, int block_v, int seg_chunks = 0) {
    CtaWork w;
    const int64_t cta = blockIdx.x;
    const int vb = int(cta % v_blocks);
    w.h = int((cta / v_blocks) % a.HV);
    w.slot = cta / v_blocks / a.HV;
    w.n = seg_chunks > 0 ? sequence_of_slot(w.slot, a.N, [&](int64_t m) { return first_segment(a.cu_seqlens[m], m, seg_chunks); })
                         : w.slot;
    w.hk = w.h / (a.HV / a.H);
    w.vcol0 = vb * block_v;
    w.bos = a.cu_seqlens[w.n];
    w.len = a.cu_seqlens[w.n + 1] - w.bos;
    w.chunks = int((w.len + kChunk - 1) / kChunk);
    w.seg = w.slot - first_segment(w.bos, w.n, seg_chunks);
    w.segs = segments_of(w.len, seg_chunks);
    w.valid = w.seg < w.segs;
    w.c_begin = seg_chunks > 0 ? int(w.seg) * seg_chunks : 0;
    w.c_end = seg_chunks > 0 && w.c_begin + seg_chunks < w.chunks ? w.c_begin + seg_chunks : w.chunks;
    return w;
  }
  __device__ __forceinline__ bool last_segment() const { return seg == segs - 1; }
  // Valid tokens of chunk c (kChunk but for the last).
  __device__ __forceinline__ int rows_of(int c) const {
    return int(len - int64_t(c) * kChunk < kChunk ? len - int64_t(c) * kChunk : kChunk);
  }
  // Packed row of chunk c's first token.
  __device__ __forceinline__ int64_t row0_of(int c) const { return bos + int64_t(c) * kChunk; }
};

}  // namespace gdn::sm90

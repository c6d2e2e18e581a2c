// Context parallelism of the two-pass schedule (host and device, C++17, no CUDA): a sequence is cut into
// segments of `seg_chunks` 64-token chunks that are scanned in parallel (kernels/prefill/sm90/README.md,
// docs/method.md A.4). Three kernels after the preparation:
//   transition  per (segment but the last, value head): the segment's state map S_end = M S_start + N
//               (M the K x K matrix: the end state of the identity with v = 0; N: the end state of
//               zero), written to the M and N buffers
//   fixup       per (sequence, value head, 8 columns): S_start(0) = h0 (or the pool slot),
//               S_start(s + 1) = M_s S_start(s) + N_s in fp32, written to the start buffer
//   scan        per (segment, value head, value block): from S_start(s), writes o; the last segment
//               writes the final state
// The decay-driven warm-up (FlashQLA's, docs/method.md A.4, with a tighter threshold): when the
// segment's last chunks decay by e^kWarmupLogDecay or more, the transition pass starts N from zero
// at the latest chunk c0 with sum_{c >= c0} G_c <= kWarmupLogDecay and drops M (a flag per segment
// and head tells the fixup): the dropped term M S(c0) has norm <= e^(sum G) |S(c0)| when every
// token's map alpha (I - beta k k^T) has norm <= alpha, i.e. with l2norm on and beta in [0, 2]
// (the warm-up is used only with l2norm). e^-15 = 3e-7, below the f16 rounding of the kernel's
// own operands (2^-11); heads that never decay (no_decay, 25 % of the standard inputs' heads)
// take the exact path with M.
// Segments are numbered like the workspace's chunk slots (workspace.h), without a prefix sum:
// segment s of sequence n is slot floor(bos_n / X) + n + s with X = 64 seg_chunks tokens; a
// sequence has max(1, ceil(len / X)) segments (a zero-length one keeps one, empty, so its final
// state is still written). seg_chunks = 0 turns context parallelism off: slot n is sequence n.
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "prefill/sm90/smem_layout.h"

namespace gdn::sm90 {

constexpr int64_t kStateFloats = int64_t(kHeadDim) * kHeadDim;
constexpr float kWarmupLogDecay = -15.f;

GDN_HD int64_t segment_tokens(int seg_chunks) { return int64_t(kChunk) * seg_chunks; }
// First segment slot of sequence n starting at packed row bos.
GDN_HD int64_t first_segment(int64_t bos, int64_t n, int seg_chunks) {
  return seg_chunks > 0 ? bos / segment_tokens(seg_chunks) + n : n;
}
// Segment slots of a batch of T tokens in N sequences.
GDN_HD int64_t segment_count(int64_t T, int64_t N, int seg_chunks) {
  return seg_chunks > 0 ? T / segment_tokens(seg_chunks) + N : N;
}
// Segments of a sequence of len tokens.
GDN_HD int64_t segments_of(int64_t len, int seg_chunks) {
  if (seg_chunks <= 0 || len <= 0) return 1;
  return (len + segment_tokens(seg_chunks) - 1) / segment_tokens(seg_chunks);
}

// Bytes of one of the three per-segment state buffers (M, N, start: fp32 [slots][HV][K][V]).
GDN_HD int64_t segment_buffer_bytes(int64_t T, int64_t N, int HV, int seg_chunks) {
  return seg_chunks > 0 ? segment_count(T, N, seg_chunks) * HV * kStateFloats * 4 : 0;
}
// Bytes of the per-(segment slot, value head) warm-up flags (int32, 1: M dropped), 256-aligned.
GDN_HD int64_t segment_flag_bytes(int64_t T, int64_t N, int HV, int seg_chunks) {
  return seg_chunks > 0 ? (segment_count(T, N, seg_chunks) * HV * 4 + 255) / 256 * 256 : 0;
}

// The last n in [0, N) whose first slot is <= slot: first slots increase with n. first(n) reads
// cu_seqlens[n] (device or host memory).
template <class FirstSlot> GDN_HD int64_t sequence_of_slot(int64_t slot, int64_t N, FirstSlot first) {
  int64_t lo = 0, hi = N - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (first(mid) <= slot) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// The device buffers of a context-parallel call (each segment_buffer_bytes), and its segment length.
struct CpArgs {
  int seg_chunks = 0;  // 0: off
  float* m = nullptr;
  float* n = nullptr;
  float* start = nullptr;
  int* warm = nullptr;  // [slots][HV]: 1 where the warm-up dropped M
};

}  // namespace gdn::sm90

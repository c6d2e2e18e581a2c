// The fixup's shape and shared memory (fixup_kernel.cuh), host and device (C++17, no CUDA), so the
// plans that size its launch (prefill/sm80's) use the kernel's own numbers.
#pragma once

#include "prefill/sm90/smem_layout.h"

namespace gdn::sm90 {

constexpr int kFixupCols = 8, kFixupThreads = 256;
constexpr int kFixupMStride = kHeadDim + 4;  // consecutive rows four banks apart: a warp's float4 reads of 32 rows take 4 wavefronts
constexpr int kFixupMFloats = kHeadDim * kFixupMStride, kFixupNFloats = kHeadDim * kFixupCols;
// The product M S in k slices, one per warp (threads / 32 of them): each warp sums its slice of k
// for rows lane + 32 i (i < 4) and all kFixupCols columns (32 accumulators), so each shared-memory
// read feeds 8 or 4 FMAs instead of 2; the slices' partial sums are added in slice order.
constexpr int kFixupRowsPerLane = kHeadDim / 32;
// M_s in m_buffers buffers, two buffers of N_s's columns, the start state and the sums of the
// threads / 32 slices (prefill/sm80 runs a fixup of 128 threads on 99 KiB devices).
constexpr int fixup_smem_bytes(int m_buffers, int threads = kFixupThreads) {
  return (m_buffers * kFixupMFloats + 3 * kFixupNFloats + threads / 32 * kFixupNFloats) * 4;
}
constexpr int kFixupSmemBytes = fixup_smem_bytes(2);
static_assert(kFixupCols == 8, "two float4 of S per k");

}  // namespace gdn::sm90

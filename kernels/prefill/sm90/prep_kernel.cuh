// Kernel v3, first of its two kernels: the state-independent preparation of every chunk at once.
// One CTA of four warps per (workspace slot, value head) (workspace.h): it finds its sequence and
// chunk, copies the chunk's q and k in, and runs the same preparation as kernels v1 and v2
// (chunk_prep.cuh: scalars, K K^T and Q K^T, the gate-free inverse, A_g), then writes A_g, P_g
// and the scalars to its slot. Nothing here waits for another chunk, so the whole batch runs in
// parallel, four CTAs per SM; the scan kernel (kernel_v3.cuh) then carries only the state chain.
#pragma once

#include <cuda_pipeline.h>

#include <cstdint>

#include "common/gdn_math.cuh"
#include "prefill/op.h"
#include "prefill/sm90/chunk_load.cuh"
#include "prefill/sm90/chunk_prep.cuh"
#include "prefill/sm90/segments.h"
#include "prefill/sm90/smem_layout.h"
#include "prefill/sm90/workspace.h"

namespace gdn::sm90 {

template <class In>
__global__ void __launch_bounds__(kPrepKernelThreads, 4) prefill_sm90_prep_kernel(const prefill::Args a, uint8_t* ws) {
  constexpr int NT = kPrepKernelThreads;
  constexpr SmemLayout L(0, kPrepKernel);
  extern __shared__ __align__(1024) uint8_t smem[];
  const int tid = int(threadIdx.x), h = int(blockIdx.y);
  const int64_t slot = blockIdx.x;
  // The sequence of this slot (segments.h: the same search as the scan's segment slots).
  const int64_t n = sequence_of_slot(slot, a.N, [&](int64_t m) { return first_slot(a.cu_seqlens[m], m); });
  const int64_t bos = a.cu_seqlens[n], len = a.cu_seqlens[n + 1] - bos;
  const int64_t c = slot - first_slot(bos, n);
  if (c * kChunk >= len) return;  // a slot between two sequences (or of an empty one)
  const int rows = int(len - c * kChunk < kChunk ? len - c * kChunk : kChunk);
  const int64_t row0 = bos + c * kChunk;

  load_qk<0, kPrepKernel, NT>(smem, 0, a, row0, rows, h / (a.HV / a.H), tid);
  __pipeline_commit();
  const dev::GateIn gate = tid < rows ? dev::load_gate(a.gate, row0 + tid, h, a.HV) : dev::GateIn{};
  __pipeline_wait_prior(0);
  __syncthreads();
  const PrepGroup<NT, 0> all{tid};
  prepare_chunk<In, 0, kPrepKernel>(all, smem, 0, 0, gate, a, rows);
  __syncthreads();

  // The slot: A_g and P_g as they lie in shared memory, then the scalars (16-byte pieces).
  uint8_t* out = ws + slot_offset(slot, h, a.HV);
  for (int e = tid; e < kSlotBytes / 16; e += NT) {
    const int at = 16 * e;
    const uint8_t* src = at < kSlotPg    ? smem + L.ag(0) + at
                         : at < kSlotScalars ? smem + L.pg(0) + (at - kSlotPg)
                                             : smem + L.scalars(0) + (at - kSlotScalars);
    *reinterpret_cast<uint4*>(out + at) = *reinterpret_cast<const uint4*>(src);
  }
}

}  // namespace gdn::sm90

// The prefill/sm90 kernel v1: one CTA per (value-column block, value head, sequence), looping over
// the sequence's 64-token chunks with the fp32 state in the registers of the warps that own its
// columns (state_warp.cuh). Per chunk: the next chunk's q/k/v are copied in (chunk_load.cuh)
// while this one is computed; the whole CTA prepares the state-independent half (chunk_prep.cuh:
// scalars, K K^T, Q K^T, the gated inverse, A_g), then the state warps advance their
// columns. Barriers separate the phases; kernel_v2.cuh overlaps the preparation of chunk c + 1
// with the state chain of chunk c (warp specialisation, docs/notes/prefill-sm90.md).
#pragma once

#include <cuda_pipeline.h>

#include <cstdint>

#include "common/gdn_math.cuh"
#include "prefill/op.h"
#include "prefill/sm90/chunk_load.cuh"
#include "prefill/sm90/chunk_prep.cuh"
#include "prefill/sm90/cta_work.cuh"
#include "prefill/sm90/smem_layout.h"
#include "prefill/sm90/state_warp.cuh"

namespace gdn::sm90 {

template <class In, int BV>
__global__ void __launch_bounds__(warps_for(BV) * 32, 1) prefill_sm90_kernel(const prefill::Args a, int v_blocks) {
  constexpr int NT = warps_for(BV) * 32;
  const PrepGroup<NT, 0> all{int(threadIdx.x)};
  extern __shared__ __align__(1024) uint8_t smem[];
  const int tid = int(threadIdx.x), warp = tid >> 5;

  const CtaWork w = CtaWork::of(a, v_blocks, BV);
  const int h = w.h, hk = w.hk, vcol0 = w.vcol0, chunks = w.chunks;
  const int64_t n = w.n, bos = w.bos;
  auto rows_of = [&](int c) { return w.rows_of(c); };

  const bool owns_state = warp < BV / kColsPerWarp;
  StateWarp<In, BV, kKernelV1> st;
  st.lane = tid & 31;
  st.lc = warp * kColsPerWarp;
  if (owns_state) st.load(initial_state(a, n, h), vcol0);

  dev::GateIn next_gate{};
  if (chunks > 0) {
    load_chunk<BV, kKernelV1, NT>(smem, 0, a, bos, rows_of(0), hk, h, vcol0, tid);
    next_gate = load_chunk_gate(a.gate, bos, rows_of(0), h, a.HV, next_gate, tid);
  }
  __pipeline_commit();
  for (int c = 0; c < chunks; ++c) {
    const int stage = c & 1, rows = rows_of(c);
    const int64_t row0 = bos + int64_t(c) * kChunk;
    const dev::GateIn gate = next_gate;
    if (c + 1 < chunks) {  // stage ^ 1 was last read in chunk c - 1, before its closing barrier
      load_chunk<BV, kKernelV1, NT>(smem, stage ^ 1, a, row0 + kChunk, rows_of(c + 1), hk, h, vcol0, tid);
      next_gate = load_chunk_gate(a.gate, row0 + kChunk, rows_of(c + 1), h, a.HV, next_gate, tid);
    }
    __pipeline_commit();
    __pipeline_wait_prior(1);  // this chunk's copies have landed (the next chunk's may be in flight)
    __syncthreads();

    prepare_chunk<In, BV, kKernelV1>(all, smem, stage, 0, gate, a, rows);
    __syncthreads();

    if (owns_state) st.chunk(smem, stage, 0, rows, row0, a, h, vcol0);
    __syncthreads();  // the stage, A_g, P_g and the scalars are free for the next chunk
  }
  if (owns_state) st.store(final_state(a, n, h), vcol0);
}

}  // namespace gdn::sm90

// The prefill/sm90 kernel: one CTA per (value-column block, value head, sequence), looping over
// the sequence's 64-token chunks with the fp32 state in the registers of the warps that own its
// columns (state_warp.cuh). Per chunk: the next chunk's q/k/v are copied in (chunk_load.cuh)
// while this one is computed; the whole CTA prepares the state-independent half (chunk_prep.cuh:
// scalars, K K^T, Q K^T, the gate-free inverse, A_g), then the state warps advance their
// columns. Barriers separate the phases; making the preparation of chunk c + 1 overlap the state
// chain of chunk c (warp specialisation) is the next step (docs/notes/prefill-sm90.md).
#pragma once

#include <cuda_pipeline.h>

#include <cstdint>

#include "common/gdn_math.cuh"
#include "prefill/op.h"
#include "prefill/sm90/chunk_load.cuh"
#include "prefill/sm90/chunk_prep.cuh"
#include "prefill/sm90/smem_layout.h"
#include "prefill/sm90/state_warp.cuh"

namespace gdn::sm90 {

template <class In, int BV>
__global__ void __launch_bounds__(warps_for(BV) * 32, 1) prefill_sm90_kernel(const prefill::Args a, int v_blocks) {
  constexpr int NT = warps_for(BV) * 32;
  constexpr SmemLayout L(BV);
  extern __shared__ __align__(1024) uint8_t smem[];
  const int tid = int(threadIdx.x), warp = tid >> 5;

  // CTA -> (V-block, value head, sequence); consecutive CTAs share a head's q/k in L2.
  const int64_t cta = blockIdx.x;
  const int vb = int(cta % v_blocks);
  const int h = int((cta / v_blocks) % a.HV);
  const int64_t n = cta / v_blocks / a.HV;
  const int hk = h / (a.HV / a.H);
  const int vcol0 = vb * BV;
  const int64_t bos = a.cu_seqlens[n];
  const int64_t len = a.cu_seqlens[n + 1] - bos;  // 0 for a repeated entry: ht = h0, no o
  const int chunks = int((len + kChunk - 1) / kChunk);
  auto rows_of = [&](int c) { return int(len - int64_t(c) * kChunk < kChunk ? len - int64_t(c) * kChunk : kChunk); };

  const bool owns_state = warp < BV / kColsPerWarp;
  StateWarp<In, BV> st;
  st.lane = tid & 31;
  st.lc = warp * kColsPerWarp;
  if (owns_state) st.load(a, n, h, vcol0);

  dev::GateIn next_gate{};
  if (chunks > 0) {
    load_chunk<BV, NT>(smem, 0, a, bos, rows_of(0), hk, h, vcol0);
    next_gate = load_chunk_gate(a.gate, bos, rows_of(0), h, a.HV, next_gate);
  }
  __pipeline_commit();
  for (int c = 0; c < chunks; ++c) {
    const int stage = c & 1, rows = rows_of(c);
    const int64_t row0 = bos + int64_t(c) * kChunk;
    const dev::GateIn gate = next_gate;
    if (c + 1 < chunks) {  // stage ^ 1 was last read in chunk c - 1, before its closing barrier
      load_chunk<BV, NT>(smem, stage ^ 1, a, row0 + kChunk, rows_of(c + 1), hk, h, vcol0);
      next_gate = load_chunk_gate(a.gate, row0 + kChunk, rows_of(c + 1), h, a.HV, next_gate);
    }
    __pipeline_commit();
    __pipeline_wait_prior(1);  // this chunk's copies have landed (the next chunk's may be in flight)
    __syncthreads();

    chunk_scalars<In, BV, NT>(smem, stage, gate, a, rows);
    chunk_products<In, BV, NT>(smem, stage, a.scale);
    __syncthreads();
    invert_in_place<NT>(reinterpret_cast<float*>(smem + L.lt), reinterpret_cast<float*>(smem + L.x));
    build_ag<In, BV, NT>(smem);
    __syncthreads();

    if (owns_state) st.chunk(smem, stage, rows, row0, a, h, vcol0);
    __syncthreads();  // the stage, A_g, P_g and the scalars are free for the next chunk
  }
  if (owns_state) st.store(a, n, h, vcol0);
}

}  // namespace gdn::sm90

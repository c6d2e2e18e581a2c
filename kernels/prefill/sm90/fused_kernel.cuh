// The fused schedule: the scan's state warpgroups on wgmma and, in the same CTA, a preparation
// warpgroup that does what the preparation kernel does, one chunk ahead, into the stage the state
// warpgroups read next: no workspace, no slot written to memory and read back (the two-pass
// schedule moves 18 KB per chunk and value head through DRAM twice). Per-stage mbarriers as in the
// scan, block_v 128 (two state warpgroups): one CTA per (value head, sequence), so a chunk is
// prepared once. The roles:
//   state warpgroups   once chunk j + 1 has landed, its q/k norms and f16 rewrite (chunk_norms)
//                      and mark it normed; then wait for stage j % 3 to be full, advance the state
//                      through chunk j (the same code as the scan's), mark it empty, and once every
//                      state thread has, copy chunk j + 3's v rows into it
//   prep warpgroup     copy chunk i + 1's q, k (and gate) in once stage (i + 1) % 3 is empty (the
//                      copies of both roles arrive on landed when they complete), wait for chunk i to be
//                      normed, prepare it into stage i % 3 (the other scalars, L and P_g on wgmma,
//                      the inverse in lt, A_g: chunk_prep.cuh), mark it full
// The norms run in the state warpgroups because the preparation sets the pace: the state warps'
// own work is about 5100 of the preparation's 13 K cycles a chunk (clock64 marks), and the norms
// about 2400 of those.
// The arithmetic is the preparation kernel's and the scan's, step for step (the products' k-steps
// on wgmma are mma.sync's), so the fused kernel gives the two-pass schedule's bits (GPU test). No
// context parallelism: a CTA walks its whole sequence. The plan takes it where GVA is 1 or 2 and
// its grid fills the GPU (plan.cpp fused_wins); elsewhere it is slower: both roles take 9-10 K
// cycles a chunk (kernels/prefill/sm90/README.md).
// Registers (384 threads, 168 a lane at launch): the state warpgroups take 192 and the
// preparation, with the loads, the remaining 120 (setmaxnreg); neither spills (184 / 128 spills 24
// bytes in the state), and the state warpgroups keep one wgmma group in flight (StateWarpgroup
// kOneGroup): two, as the scan does at 208, make ptxas serialize every wgmma (C7512).
#pragma once

#include <cuda/ptx>
#include <cuda_pipeline.h>

#include <cstdint>

#include "common/gdn_math.cuh"
#include "common/ptx/opaque.cuh"
#include "common/ptx/setmaxnreg.cuh"
#include "prefill/op.h"
#include "prefill/sm90/chunk_load.cuh"
#include "prefill/sm90/chunk_prep.cuh"
#include "prefill/sm90/cta_work.cuh"
#include "prefill/sm90/smem_layout.h"
#include "prefill/sm90/stage_barriers.cuh"
#include "prefill/sm90/state_warpgroup.cuh"

namespace gdn::sm90 {

constexpr int kFusedPrepBarrier = 1;  // named barrier id of the preparation warpgroup
constexpr int kFusedStateRegs = 192, kFusedPrepRegs = 120;
static_assert(2 * 128 * kFusedStateRegs + 128 * kFusedPrepRegs <= 168 * 384, "setmaxnreg within the CTA's launch registers");

// pingpong: the two state warpgroups issue their products in turn (state_warpgroup.cuh).
template <class In>
__global__ void __launch_bounds__(warps_for(kFusedBlockV) * 32, 1)
    prefill_sm90_fused_kernel(const prefill::Args a, int v_blocks, bool pingpong) {
  constexpr int BV = kFusedBlockV;
  constexpr int kStateWarps = BV / kColsPerWarp, NP = kPrepWarps * 32;
  extern __shared__ __align__(1024) uint8_t smem[];
  const int tid = int(threadIdx.x), warp = tid >> 5;
  const CtaWork w = CtaWork::of(a, v_blocks, BV);
  const int count = w.chunks;

  // Per stage, full (the preparation's NP arrivals: the chunk is in and prepared) and empty (the
  // state warpgroups' arrivals); landed (each preparation thread's copies of the chunk complete:
  // cp.async arrivals) and normed (the state warpgroups' arrivals: its q/k norms are done).
  constexpr int NS = kStateWarps * 32;
  __shared__ StageBarriers bars;
  __shared__ uint64_t landed[3], normed[3];
  bars.init(tid, NP, NS);
  if (tid == 0)
    for (int s = 0; s < 3; ++s) {
      cuda::ptx::mbarrier_init(&landed[s], NP + NS);
      cuda::ptx::mbarrier_init(&normed[s], NS);
    }
  __syncthreads();

  if (warp < kStateWarps) {
    ptx::setmaxnreg_inc<kFusedStateRegs>();
    StateWarpgroup<In, BV, true> st;  // at 192 registers, one wgmma group at a time
    st.lane = tid & 31;
    st.lc = warp * kColsPerWarp;
    st.begin_turns(pingpong ? warp / 4 : -1);
    // Chunk i's v rows into stage i % 3 (its q and k come from the preparation): the state
    // warpgroups free the stage, so they refill it; each thread's copies arrive on landed.
    auto load_v_of = [&](int i) {
      load_v<BV, kFusedKernel, NS>(smem, i % 3, a, w.row0_of(i), w.rows_of(i), w.h, w.vcol0, ptx::opaque(tid));
      cuda::ptx::cp_async_mbarrier_arrive_noinc(&landed[i % 3]);
    };
    for (int i = 0; i < 3 && i < count; ++i) load_v_of(i);
    st.load(initial_state(a, w.n, w.h), w.vcol0);
    // Chunk i's q/k norms (and bf16 rows rewritten as f16) into its stage, for the preparation.
    auto norm = [&](int i) {
      wait_phase(&landed[i % 3], i / 3);
      chunk_norms<In, BV, kFusedKernel>(PrepGroup<NS, 0>{ptx::opaque(tid)}, smem, i % 3, i % 3, a, w.rows_of(i));
      cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the preparation's wgmma read the tiles
      cuda::ptx::mbarrier_arrive(&normed[i % 3]);
    };
    if (count > 0) norm(0);
    for (int j = 0; j < count; ++j) {
      const int stage = j % 3;
      if (j + 1 < count) norm(j + 1);  // while the preparation works on chunk j
      wait_phase(&bars.full[stage], j / 3);
      st.template chunk<true>(smem, stage, stage, w.rows_of(j), w.row0_of(j), a, w.h, w.vcol0);
      cuda::ptx::mbarrier_arrive(&bars.empty[stage]);  // the stage is free for chunk j + 3
      if (j + 3 < count) {  // once every state thread is done with the stage (o is staged in its v rows)
        wait_phase(&bars.empty[stage], j / 3);
        load_v_of(j + 3);
      }
    }
    st.end_turns();
    st.store(final_state(a, w.n, w.h), w.vcol0);
  } else {
    ptx::setmaxnreg_dec<kFusedPrepRegs>();
    const PrepGroup<NP, kFusedPrepBarrier> prep{tid - kStateWarps * 32};
    // Chunk i into stage i % 3 once the state warpgroups are done with chunk i - 3 there.
    auto load = [&](int i) {
      if (i >= 3) wait_phase(&bars.empty[i % 3], i / 3 - 1);
      load_qk<BV, kFusedKernel, NP>(smem, i % 3, a, w.row0_of(i), w.rows_of(i), w.hk, prep.tid);
      cuda::ptx::cp_async_mbarrier_arrive_noinc(&landed[i % 3]);  // once this thread's copies complete
    };
    dev::GateIn next_gate{};  // prep threads 0..63: the gate words of the chunk prepared next
    if (count > 0) {
      load(0);
      next_gate = load_chunk_gate(a.gate, w.row0_of(0), w.rows_of(0), w.h, a.HV, next_gate, prep.tid);
    }
    __pipeline_commit();
    for (int i = 0; i < count; ++i) {
      const dev::GateIn gate = next_gate;
      if (i + 1 < count) {
        load(i + 1);
        next_gate = load_chunk_gate(a.gate, w.row0_of(i + 1), w.rows_of(i + 1), w.h, a.HV, next_gate, prep.tid);
      }
      __pipeline_commit();
      __pipeline_wait_prior(1);  // chunk i has landed (chunk i + 1 may be in flight) ...
      wait_phase(&normed[i % 3], i / 3);  // ... and the state warpgroups have its norms
      prep.sync();
      // An opaque copy of the thread index per chunk: otherwise ptxas hoists the preparation's
      // shared-memory addresses out of the chunk loop and spills them at 120 registers.
      const PrepGroup<NP, kFusedPrepBarrier> fresh{ptx::opaque(prep.tid)};
      prepare_chunk<In, BV, kFusedKernel, false>(fresh, smem, i % 3, i % 3, gate, a, w.rows_of(i));
      // wgmma reads shared memory through the async proxy: this thread's stores first.
      cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
      cuda::ptx::mbarrier_arrive(&bars.full[i % 3]);  // chunk i is ready
    }
  }
}

}  // namespace gdn::sm90

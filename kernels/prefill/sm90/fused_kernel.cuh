// The fused schedule: one CTA per (sequence, value head) at block_v 128 whose warpgroups each keep
// one job, meeting at per-stage mbarriers (three stages):
//   state warpgroups 0-1  once stage j % 3 is full, advance the state through chunk j (the scan's
//                         code, state_warpgroup.cuh); mark it empty
//   preparation warpgroup once chunk i is normed, prepare it into stage i % 3 (the scalars, L and
//                         P_g on wgmma, the inverse in lt, A_g: chunk_prep.cuh); mark it full
//   producer warpgroup    copy chunk i + 2's q, k and v into stage (i + 2) % 3 once the state
//                         warpgroups are done with chunk i - 1 there; once chunk i has landed, its
//                         q/k norms and f16 rewrite; mark it normed
// No workspace: nothing of a chunk goes to memory and back (the two-pass schedule moves 18 KB per
// chunk and value head through DRAM twice), and each chunk is prepared once. The arithmetic is the
// preparation kernel's and the scan's, step for step (the products' k-steps on wgmma are
// mma.sync's), so the fused kernel gives the two-pass schedule's bits (GPU test). No context
// parallelism: a CTA walks its whole sequence. The plan takes it where GVA is 1 or 2 and its grid
// fills the GPU (plan.cpp fused_wins).
// Registers (512 threads, 128 a lane at launch): state 2 x 192, preparation 104, producer 24
// (setmaxnreg), the 65,536 an SM holds. The state warpgroups keep one wgmma group in flight
// (StateWarpgroup kOneGroup): two at 192 make ptxas serialize every wgmma (C7512); at 184 it does
// so with one.
#pragma once

#include <cuda/ptx>
#include <cuda_pipeline.h>

#include <cstdint>
#include <type_traits>

#include "common/gdn_math.cuh"
#include "common/ptx/named_barrier.cuh"
#include "common/ptx/opaque.cuh"
#include "common/ptx/setmaxnreg.cuh"
#include "prefill/op.h"
#include "prefill/sm90/next_checkpoint.cuh"
#include "prefill/sm90/chunk_load.cuh"
#include "prefill/sm90/chunk_prep.cuh"
#include "prefill/sm90/cta_work.cuh"
#include "prefill/sm90/smem_layout.h"
#include "prefill/sm90/stage_barriers.cuh"
#include "prefill/sm90/state_warpgroup.cuh"

namespace gdn::sm90 {

// Named barriers: 1 the preparation warpgroup, 2-3 the state warpgroups' turns, 4 the producer.
constexpr int kFusedPrepBarrier = 1, kProducerBarrier = 4;
constexpr int kFusedStateRegs = 192, kFusedPrepRegs = 104, kProducerRegs = 24;
static_assert(2 * 128 * kFusedStateRegs + 128 * (kFusedPrepRegs + kProducerRegs) <= 65536, "setmaxnreg within the SM's registers");

// Inverse norms of chunk `stage`'s 64 k rows and 64 q rows into buffer `buf` (rk, rq), bf16 rows
// rewritten as f16 (the MMA type), by the 128 producer threads in 24 registers: item e = (row,
// quarter), four items a thread, a quarter's four 16-byte pieces one at a time; the four lanes of a
// row combine their sums by two shuffles. The piece order is chunk_norms' (conflict-free).
template <class In, int BV>
__device__ __forceinline__ void producer_norms(int tid, uint8_t* smem, int stage, int buf, const prefill::Args& a, int rows) {
  constexpr SmemLayout L(BV, kFusedKernel);
  const int quarter = tid & 3;
#pragma unroll 1
  for (int m = 0; m < 4; ++m) {
    const int e = tid + m * 128;
    const int row = (e >> 2) & (kChunk - 1);
    uint8_t* p = smem + (e >= 4 * kChunk ? L.q(stage) : L.k(stage)) + row * 128;
    float ss[2] = {0.f, 0.f};
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      uint8_t* piece = p + (c >> 1) * kHalfTileBytes + 16 * ((2 * quarter + (row & 1) + (c & 1)) & 7);
      uint4 w = *reinterpret_cast<const uint4*>(piece);
      sum_sq_to_f16<In>(w, ss);
      if constexpr (!std::is_same_v<In, __half>) *reinterpret_cast<uint4*>(piece) = w;
    }
    float sum = ss[0] + ss[1];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    if (quarter == 0) {
      const float inv = a.l2norm ? 1.f / sqrtf(sum + kL2NormEpsF) : 1.f;
      scalar_vec<BV, kFusedKernel>(smem, buf, e >= 4 * kChunk ? kRq : kRk)[row] = row < rows ? inv : 0.f;
    }
  }
}

// pingpong: the two state warpgroups issue their products in turn (state_warpgroup.cuh). kCkpt:
// the state warpgroups also store the state after each checkpoint's chunk (next_checkpoint.cuh).
template <class In, bool kCkpt = false>
__global__ void __launch_bounds__(kFusedThreads, 1) prefill_sm90_fused_kernel(const prefill::Args a, int v_blocks, bool pingpong) {
  constexpr int BV = kFusedBlockV;
  constexpr int kStateWarps = BV / kColsPerWarp, NS = kStateWarps * 32, NP = kPrepWarps * 32;
  static_assert(NS + 2 * NP == kFusedThreads, "state, preparation and producer warpgroups");
  extern __shared__ __align__(1024) uint8_t smem[];
  const int tid = int(threadIdx.x), warp = tid >> 5;
  const CtaWork w = CtaWork::of(a, v_blocks, BV);
  const int count = w.chunks;

  // Per stage: full (the preparation's arrivals), empty (the state warpgroups'), normed (the
  // producer's: the chunk's q, k and v have landed, and its norms are done).
  __shared__ StageBarriers bars;
  __shared__ uint64_t normed[3];
  bars.init(tid, NP, NS);
  if (tid == 0)
    for (int s = 0; s < 3; ++s) cuda::ptx::mbarrier_init(&normed[s], NP);
  __syncthreads();

  if (warp < kStateWarps) {
    ptx::setmaxnreg_inc<kFusedStateRegs>();
    StateWarpgroup<In, BV, true> st;  // at 192 registers, one wgmma group at a time
    st.lane = tid & 31;
    st.lc = warp * kColsPerWarp;
    st.begin_turns(pingpong ? warp / 4 : -1);
    st.load(initial_state(a, w.n, w.h), w.vcol0);
    [[maybe_unused]] NextCheckpoint checkpoints;
    [[maybe_unused]] StateRef pending;  // the checkpoint of the chunk before, stored under this chunk's U^T
    [[maybe_unused]] const int col = w.vcol0 + st.lc + (st.lane >> 2);  // the lane's first column
    if constexpr (kCkpt) checkpoints = NextCheckpoint::at(a, w.n, 0, st.lane);
    for (int j = 0; j < count; ++j) {
      const int stage = j % 3;
      wait_phase(&bars.full[stage], j / 3);
      if constexpr (kCkpt)
        st.template chunk<true>(smem, stage, stage, w.rows_of(j), w.row0_of(j), a, w.h, w.vcol0,
                                [&] { store_state_columns(pending, st.s, st.lane, col); });
      else
        st.template chunk<true>(smem, stage, stage, w.rows_of(j), w.row0_of(j), a, w.h, w.vcol0);
      cuda::ptx::mbarrier_arrive(&bars.empty[stage]);  // o has left the stage's v rows
      if constexpr (kCkpt) pending = checkpoints.due(j, w.len) ? checkpoints.take(a, w.n, w.h, st.lane) : StateRef{};
    }
    if constexpr (kCkpt) store_state_columns(pending, st.s, st.lane, col);
    st.end_turns();
    st.store(final_state(a, w.n, w.h), w.vcol0);
  } else if (warp < kStateWarps + kPrepWarps) {
    ptx::setmaxnreg_dec<kFusedPrepRegs>();
    const int ptid = tid - NS;
    dev::GateIn next_gate{};  // prep threads 0..63: the gate words of the chunk prepared next
    if (count > 0) next_gate = load_chunk_gate(a.gate, w.row0_of(0), w.rows_of(0), w.h, a.HV, next_gate, ptid);
    for (int i = 0; i < count; ++i) {
      const dev::GateIn gate = next_gate;
      if (i + 1 < count) next_gate = load_chunk_gate(a.gate, w.row0_of(i + 1), w.rows_of(i + 1), w.h, a.HV, next_gate, ptid);
      // Normed implies the stage and its buffer are free: the producer waited for the state
      // warpgroups' empty before copying the chunk in.
      wait_phase(&normed[i % 3], i / 3);
      // An opaque copy of the thread index per chunk: otherwise ptxas hoists the preparation's
      // shared-memory addresses out of the chunk loop and spills them.
      const PrepGroup<NP, kFusedPrepBarrier> fresh{ptx::opaque(ptid)};
      prepare_chunk<In, BV, kFusedKernel, false>(fresh, smem, i % 3, i % 3, gate, a, w.rows_of(i));
      // wgmma reads shared memory through the async proxy: this thread's stores first.
      cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
      cuda::ptx::mbarrier_arrive(&bars.full[i % 3]);
    }
  } else {
    ptx::setmaxnreg_dec<kProducerRegs>();
    const int ptid = tid - NS - NP;
    // Chunk i's q, k and v into stage i % 3: one cp.async group per chunk, empty past the end, so
    // that "all but the latest group" is always the chunk to norm.
    auto copy = [&](int i) {
      if (i < count) {
        if (i >= 3) wait_phase(&bars.empty[i % 3], i / 3 - 1);
        const int opaque_tid = ptx::opaque(ptid);
        load_qk<BV, kFusedKernel, NP>(smem, i % 3, a, w.row0_of(i), w.rows_of(i), w.hk, opaque_tid);
        load_v<BV, kFusedKernel, NP>(smem, i % 3, a, w.row0_of(i), w.rows_of(i), w.h, w.vcol0, opaque_tid);
      }
      __pipeline_commit();
    };
    copy(0);
    copy(1);
    for (int i = 0; i < count; ++i) {
      __pipeline_wait_prior(1);                      // this thread's copies of chunk i have landed ...
      ptx::named_bar_sync(kProducerBarrier, NP);     // ... and every producer thread's
      producer_norms<In, BV>(ptx::opaque(ptid), smem, i % 3, i % 3, a, w.rows_of(i));
      cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the tiles are read by wgmma
      cuda::ptx::mbarrier_arrive(&normed[i % 3]);
      copy(i + 2);
    }
  }
}

}  // namespace gdn::sm90

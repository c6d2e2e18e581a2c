// The prefill/sm90 kernel v2, warp-specialised: the same CTA work and the same arithmetic as v1
// (kernel.cuh), but the chunk's state-independent preparation (chunk_prep.cuh) runs one chunk
// ahead on its own warps. Warps 0 .. BV / 16 - 1 own the state (state_warp.cuh); the kPrepWarps
// after them copy the chunks in and prepare them. Step i of the loop:
//   prep warps    copy chunk i + 1 into stage (i + 1) % 3, wait for chunk i, prepare it into
//                 stage i % 3 (q/k as f16) and buffer i % 2 (scalars, A_g, P_g); their own
//                 phases are separated by a named barrier of the prep warps alone
//   state warps   advance the state through chunk i - 1 (stage (i - 1) % 3, buffer (i - 1) % 2)
// and one CTA barrier ends the step: the prepared chunk passes to the state warps, the stage and
// buffer they read become free. A step costs the longer of the two roles, not their sum.
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

constexpr int kPrepBarrier = 1;  // named barrier id of the prep warps (0 is __syncthreads')

template <class In, int BV>
__global__ void __launch_bounds__(warps_for(BV, kKernelV2) * 32, 1)
    prefill_sm90_v2_kernel(const prefill::Args a, int v_blocks) {
  static_assert(BV == 32 || BV == 64, "v2: state warps and prep warps share 255 registers a lane (8 warps at most)");
  constexpr int kStateWarps = BV / kColsPerWarp, NP = kPrepWarps * 32;
  extern __shared__ __align__(1024) uint8_t smem[];
  const int tid = int(threadIdx.x), warp = tid >> 5;
  const CtaWork w = CtaWork::of(a, v_blocks, BV);
  const bool is_state = warp < kStateWarps;
  const PrepGroup<NP, kPrepBarrier> prep{tid - kStateWarps * 32};

  StateWarp<In, BV, kKernelV2> st;
  st.lane = tid & 31;
  st.lc = warp * kColsPerWarp;
  if (is_state) st.load(initial_state(a, w.n, w.h), w.vcol0);

  dev::GateIn next_gate{};  // prep threads 0..63: the gate words of the chunk prepared next
  if (!is_state) {
    if (w.chunks > 0) {
      load_chunk<BV, kKernelV2, NP>(smem, 0, a, w.bos, w.rows_of(0), w.hk, w.h, w.vcol0, prep.tid);
      next_gate = load_chunk_gate(a.gate, w.bos, w.rows_of(0), w.h, a.HV, next_gate, prep.tid);
    }
    __pipeline_commit();
  }
  for (int i = 0; i <= w.chunks; ++i) {
    if (is_state) {
      if (i > 0) {
        const int c = i - 1;
        st.chunk(smem, c % 3, c & 1, w.rows_of(c), w.row0_of(c), a, w.h, w.vcol0);
      }
    } else if (i < w.chunks) {
      const dev::GateIn gate = next_gate;
      if (i + 1 < w.chunks) {  // stage (i + 1) % 3 was last read by the state warps in step i - 1
        load_chunk<BV, kKernelV2, NP>(smem, (i + 1) % 3, a, w.row0_of(i + 1), w.rows_of(i + 1), w.hk, w.h, w.vcol0,
                                      prep.tid);
        next_gate = load_chunk_gate(a.gate, w.row0_of(i + 1), w.rows_of(i + 1), w.h, a.HV, next_gate, prep.tid);
      }
      __pipeline_commit();
      __pipeline_wait_prior(1);  // chunk i has landed (chunk i + 1 may be in flight) ...
      prep.sync();               // ... for every prep thread's copies
      prepare_chunk<In, BV, kKernelV2>(prep, smem, i % 3, i & 1, gate, a, w.rows_of(i));
    }
    __syncthreads();  // chunk i is prepared; chunk i - 1's stage and buffer are free
  }
  if (is_state) st.store(final_state(a, w.n, w.h), w.vcol0);
}

}  // namespace gdn::sm90

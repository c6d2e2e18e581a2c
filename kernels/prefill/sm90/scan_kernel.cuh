// The two-pass schedule's second kernel: the scan. A chunk's preparation is already in the
// workspace (prep_kernel.cuh), so the state chain is all that is left in series. One CTA per
// (value-column block, value head, sequence or segment) (cta_work.cuh); warps 0 .. BV / 16 - 1 own
// the state (state_warp.cuh on mma.sync at block_v 32, state_warpgroup.cuh on wgmma at 64 and
// 128); the kPrepWarps after them only load:
//   load warps    copy chunk i + 1 (q, k, v and its workspace slot: A_g, P_g, the scalars) into
//                 stage (i + 1) % 3 once chunk i - 2 is consumed, wait for chunk i, convert its
//                 bf16 q/k to f16 in place, mark stage i % 3 full
//   state warps   wait for stage j % 3 to be full, advance the state through chunk j, mark it empty
// The roles meet only at these per-stage mbarriers, not at a CTA barrier per chunk. With context
// parallelism (segments.h) a CTA scans one segment of its sequence from the start state the fixup
// computed; the same kernel without outputs (kOut false) is the transition pass.
#pragma once

#include <cuda/ptx>
#include <cuda_pipeline.h>

#include <cstdint>
#include <type_traits>

#include "common/gdn_math.cuh"
#include "common/ptx/cp_async.cuh"
#include "common/ptx/named_barrier.cuh"
#include "common/ptx/setmaxnreg.cuh"
#include "prefill/op.h"
#include "prefill/sm90/checkpoints.cuh"
#include "prefill/sm90/chunk_load.cuh"
#include "prefill/sm90/cta_work.cuh"
#include "prefill/sm90/fragments.cuh"
#include "prefill/sm90/next_checkpoint.cuh"
#include "prefill/sm90/pdl.cuh"
#include "prefill/sm90/pool_8bit.cuh"
#include "prefill/sm90/segments.h"
#include "prefill/sm90/smem_layout.h"
#include "prefill/sm90/stage_barriers.cuh"
#include "prefill/sm90/state_warp.cuh"
#include "prefill/sm90/state_warpgroup.cuh"
#include "prefill/sm90/workspace.h"

namespace gdn::sm90 {

constexpr int kLoadBarrier = 1;  // named barrier id of the load warps

// Workspace slot `slot` of value head h into stage `stage` (workspace.h): the stage's buffer is the
// slot as it lies in the workspace, one contiguous copy. kPg false: without P_g (the transition
// pass has no o).
template <int BV, int NT, bool kPg = true, int Kern = kScanKernel>
__device__ __forceinline__ void load_slot(uint8_t* smem, int stage, const uint8_t* ws, int64_t slot, int HV, int h,
                                          int tid) {
  constexpr SmemLayout L(BV, Kern);
  static_assert(L.pg0 == L.ag0 + kHalfTileBytes && L.scalars0 == L.ag0 + 2 * kHalfTileBytes && kSlotScalars == 2 * kHalfTileBytes,
                "a buffer is a slot");
  const uint8_t* in = ws + slot_offset(slot, h, HV) + 16 * tid;
  const uint32_t dst = smem_u32(smem) + L.ag(stage) + 16 * tid;
#pragma unroll
  for (int m = 0; m < (kSlotBytes / 16 + NT - 1) / NT; ++m)
    if (const int e = m * NT + tid; e < kSlotBytes / 16 && (kPg || 16 * e < kSlotPg || 16 * e >= kSlotScalars))
      ptx::cp_async_16_zfill(dst + uint32_t(16 * m * NT), in + 16 * m * NT, true);
}

// bf16 q and k of stage `stage` rewritten as f16 in place (the MMA operand type: exact inside
// f16's range, as the preparation converts them).
template <class In, int BV, int NT, bool kQ = true, int Kern = kScanKernel>
__device__ __forceinline__ void qk_to_f16(uint8_t* smem, int stage, int tid) {
  constexpr SmemLayout L(BV, Kern);
  static_assert(L.k0 == L.q0 + L.q_tiles * kQKTileBytes, "q tiles, then k stages");
  for (int e = kQ ? tid : tid + kQKTileBytes / 16; e < 2 * kQKTileBytes / 16; e += NT) {
    const int at = 16 * e;
    uint4* p = reinterpret_cast<uint4*>(smem + (at < kQKTileBytes ? L.q(stage) + at : L.k(stage) + at - kQKTileBytes));
    uint4 w = *p;
    uint32_t x[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) x[i] = pack_f16x2(dev::lo16<In>(x[i]), dev::hi16<In>(x[i]));
    *p = make_uint4(x[0], x[1], x[2], x[3]);
  }
}

// The transition pass's warm-up start (segments.h): the latest chunk c0 of [c_begin, c_end) with
// sum_{c >= c0} G_c <= kWarmupLogDecay, or -1 (take the whole segment and M). One warp, 32
// chunks per step from the end; G_c is the chunk's total log decay, gam at its last token (beside
// e^G in the slot; all chunks of a segment but a sequence's last are full).
__device__ __forceinline__ int warmup_start(const uint8_t* ws, int64_t slot0, int c_begin, int c_end, int h, int HV, int lane) {
  float total = 0.f;
  for (int top = c_end - 1; top >= c_begin; top -= 32) {
    const int c = top - lane;
    float G = 0.f;
    if (c >= c_begin)
      G = *reinterpret_cast<const float*>(ws + slot_offset(slot0 + c, h, HV) + kSlotGOffset);
    // Inclusive suffix sum from the segment's end: lane i holds sum over chunks top - i .. top.
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const float x = __shfl_up_sync(0xffffffffu, G, d);
      if (lane >= d) G += x;
    }
    const unsigned hit = __ballot_sync(0xffffffffu, c >= c_begin && total + G <= kWarmupLogDecay);
    if (hit != 0u) return top - (__ffs(int(hit)) - 1);
    total += __shfl_sync(0xffffffffu, G, 31);
  }
  return -1;
}

// block_v 128: two state warpgroups and the load warpgroup are 384 threads, launched at 168
// registers a lane (64512 for the CTA); the load warpgroup gives registers back and the state
// warpgroups take them (setmaxnreg) within what the CTA holds: 2 x 128 x 208 + 128 x 88 = 64512
// (224 / 64 asks for 65536: setmaxnreg.inc then waits forever). 208 / 88 compiles without spills;
// 224 / 56 spills 92 bytes (the load role), 216 / 72 12.
constexpr int kStateRegs = 208, kLoadRegs = 88;
static_assert(2 * 128 * kStateRegs + 128 * kLoadRegs <= 168 * 384, "setmaxnreg within the CTA's launch registers");

// The state warps are warpgroups on wgmma (state_warpgroup.cuh) at block_v 64 and 128, else each
// warp runs mma.sync (state_warp.cuh). pingpong: block_v 128's two state warpgroups issue their
// products in turn (state_warpgroup.cuh). kCkpt: the state warps also store the state after each
// checkpoint's chunk (checkpoints.cuh). Q: an 8-bit pool's format (pool_8bit.cuh; void for f32 and
// bf16 pools), its row scales the trailing pool_scale: the start state (unsplit; a split's segments
// start from the fixup's fp32 buffer), the checkpoints and the final state as codes with a scale
// per row.
// Kern: the layout, kScanKernel (three stages), kScan2Kernel (two: prefill/sm80) or kScanQ1Kernel
// (two, one q tile: prefill/sm80 on 99 KiB devices, block_v 32; the load warps copy the next
// chunk's q once the state warps have read this one's, see below). kMma: mma.sync
// state warps at any block_v (prefill/sm80's block_v 64: four of them), else warpgroups on wgmma
// from block_v 64 on.
// The body of the scan kernels (prefill_sm90_scan_kernel below, and prefill/sm80's).
template <class In, int BV, bool kOut, bool kCkpt = false, class Q = void, int Kern = kScanKernel, bool kMma = (BV == 32)>
__device__ __forceinline__ void scan_chunks(const prefill::Args& a, int v_blocks, const uint8_t* ws, const CpArgs& cp,
                                            bool pingpong, float* pool_scale) {
  static_assert(BV == 32 || BV == 64 || BV == 128, "block_v 32 (mma.sync), 64 or 128 (wgmma; 128: setmaxnreg)");
  static_assert(Kern == kScanKernel || ((Kern == kScan2Kernel || Kern == kScanQ1Kernel) && kMma),
                "two stages on mma.sync state warps only");
  constexpr bool kQ1 = Kern == kScanQ1Kernel && kOut;  // the transition pass reads no q: the usual ring
  static_assert(Kern != kScanQ1Kernel || (BV == 32 && !kCkpt), "one q tile at block_v 32, without checkpoints");
  static_assert(kMma || BV >= 64, "wgmma state warpgroups from block_v 64 on");
  static_assert(!kMma || BV <= 64, "mma.sync state warps: at most four (block_v 64)");
  constexpr int S = SmemLayout(BV, Kern).stages;
  static_assert(kOut || !kCkpt, "the transition pass saves no checkpoints");
  constexpr bool kQ8 = !std::is_void_v<Q>;
  static_assert(kOut || !kQ8, "the transition pass reads no pool");
  constexpr bool kWg = !kMma;
  constexpr int kStateWarps = BV / kColsPerWarp, NL = kPrepWarps * 32;
  extern __shared__ __align__(1024) uint8_t smem[];
  // Launched as a programmatic dependent (Plan::pdl): the next kernel may start its CTAs, and this
  // one waits here for the kernel before it (the preparation's slots, the maps, the start states).
  // Without PDL both return at once.
  ptx::pdl_trigger();
  ptx::pdl_wait();
  const int tid = int(threadIdx.x), warp = tid >> 5;
  const CtaWork w = CtaWork::of(a, v_blocks, BV, cp.seg_chunks);
  if (!w.valid || (!kOut && w.last_segment())) return;  // a slot between sequences; the last segment's map is not needed
  // The transition pass (kOut false) runs 2 x 128 columns: N's (from zero, with v), then M's
  // (from the identity, v = 0).
  const bool m_cols = !kOut && w.vcol0 >= kHeadDim;
  const int col0 = m_cols ? w.vcol0 - kHeadDim : w.vcol0;
  const bool is_state = warp < kStateWarps;
  const int ltid = tid - kStateWarps * 32;
  const int64_t slot0 = first_slot(w.bos, w.n);
  int c_begin = w.c_begin;
  if constexpr (!kOut) {
    __shared__ int warm_start;
    if (warp == 0) {
      const int c0 = a.l2norm ? warmup_start(ws, slot0, w.c_begin, w.c_end, w.h, a.HV, tid) : -1;
      if (tid == 0) {
        warm_start = c0;
        if (w.vcol0 == 0) cp.warm[w.slot * a.HV + w.h] = c0 >= 0;
      }
    }
    __syncthreads();
    if (warm_start >= 0) {
      if (m_cols) return;  // M dropped: the fixup takes S_start(s + 1) = N_s
      c_begin = warm_start;
    }
  }
  const int count = w.c_end - c_begin;

  // Per stage, full (the load warps' NL arrivals: the chunk is in and converted) and empty (the
  // state warps' arrivals): each role waits only for what it needs, with no CTA barrier per chunk.
  __shared__ StageBarriers bars;
  bars.init(tid, NL, kStateWarps * 32);
  __syncthreads();

  // The two roles in separate branches (ptxas allocates 215-217 registers instead of 229 for a
  // shared loop; and a role's registers can be rebalanced by setmaxnreg).
  if (is_state) {
    if constexpr (BV == 128) ptx::setmaxnreg_inc<kStateRegs>();
    std::conditional_t<kWg, StateWarpgroup<In, BV>, StateWarp<In, BV, Kern>> st;
    st.lane = tid & 31;
    st.lc = warp * kColsPerWarp;
    constexpr bool kTurns = BV == 128;
    if constexpr (kTurns) st.begin_turns(pingpong ? warp / 4 : -1);
    if (m_cols) st.load_identity(col0);
    else if (!kOut) st.load(StateRef{}, 0);
    else if constexpr (!kQ8) st.load(cp.seg_chunks > 0 ? buffer_state(cp.start, w.slot, w.h, a.HV) : initial_state(a, w.n, w.h), col0);
    else if (cp.seg_chunks > 0) st.load(buffer_state(cp.start, w.slot, w.h, a.HV), col0);
    else load_8bit<Q>(st.s, st.lane, col0 + st.lc, own_slot_8bit(a, pool_scale, w.n, w.h));
    // The mma.sync scan with f32/bf16 pools takes the fused twin's checkpoints (next_checkpoint.cuh):
    // a cursor one checkpoint ahead, and each checkpoint's stores issued inside the next chunk,
    // among its first products (which read the state but do not change it), not on the chain
    // between chunks.
    constexpr bool kCursor = kCkpt && !kQ8 && !kWg;
    // The block_v 64 wgmma twin takes the cursor too (the slot's index loaded a checkpoint ahead),
    // and stores right after the empty arrival: ptxas serializes its wgmma with the stores inside
    // the chunk. The block_v 128 twin and the 8-bit twins keep checkpoints.cuh (README.md,
    // Checkpoints).
    constexpr bool kWgCursor = kCkpt && !kQ8 && kWg && BV == 64;
    [[maybe_unused]] CheckpointCursor checkpoints;
    [[maybe_unused]] NextCheckpoint next;
    [[maybe_unused]] StateRef pending;  // the checkpoint of the chunk before, stored in this chunk
    [[maybe_unused]] const int ckpt_col = col0 + st.lc + (st.lane >> 2);
    if constexpr (kCursor || kWgCursor) next = NextCheckpoint::at(a, w.n, c_begin, st.lane);
    else if constexpr (kCkpt) checkpoints = CheckpointCursor::at(a, w.n, c_begin);
    for (int j = 0; j < count; ++j) {
      const int c = c_begin + j, stage = j % S;
      wait_phase(&bars.full[stage], j / S);
      if constexpr (kCursor) {
        st.template chunk<kOut>(smem, stage, stage, w.rows_of(c), w.row0_of(c), a, w.h, col0,
                                [&] { store_state_columns(pending, st.s, st.lane, ckpt_col); });
        cuda::ptx::mbarrier_arrive(&bars.empty[stage]);
        pending = next.due(c, w.len) ? next.take(a, w.n, w.h, st.lane) : StateRef{};
        continue;
      } else if constexpr (kQ1) {
        // bars.empty[2] (unused with two stages): the q tile is free once every state thread is
        // past this chunk's (Q S)^T.
        st.template chunk<kOut>(smem, stage, stage, w.rows_of(c), w.row0_of(c), a, w.h, col0, [] {},
                                [&] { cuda::ptx::mbarrier_arrive(&bars.empty[2]); });
      } else {
        st.template chunk<kOut>(smem, stage, stage, w.rows_of(c), w.row0_of(c), a, w.h, col0);
      }
      cuda::ptx::mbarrier_arrive(&bars.empty[stage]);  // the stage is free for chunk j + S
      if constexpr (kWgCursor) {
        if (next.due(c, w.len)) store_state_columns(next.take(a, w.n, w.h, st.lane), st.s, st.lane, ckpt_col);
      } else if constexpr (kCkpt && kQ8)
        store_8bit<Q>(st.s, st.lane, col0 + st.lc,
                      checkpoint_slot_8bit(a, pool_scale, w.n, w.h, checkpoints.index_after(a, w.n, c, w.len)));
      else if constexpr (kCkpt) st.store(checkpoints.after_chunk(a, w.n, w.h, c, w.len), col0);
    }
    if constexpr (kCursor) store_state_columns(pending, st.s, st.lane, ckpt_col);  // the last chunk's checkpoint
    if constexpr (kTurns) st.end_turns();
    if constexpr (kQ8) store_8bit<Q>(st.s, st.lane, col0 + st.lc, w.last_segment() ? own_slot_8bit(a, pool_scale, w.n, w.h) : Slot8{});
    else if constexpr (kOut) st.store(w.last_segment() ? final_state(a, w.n, w.h) : StateRef{}, col0);
    else st.store(buffer_state(m_cols ? cp.m : cp.n, w.slot, w.h, a.HV), col0);
  } else {
    if constexpr (BV == 128) ptx::setmaxnreg_dec<kLoadRegs>();
    auto load = [&](int i) {
      const int c = c_begin + i;
      load_qk<BV, Kern, NL, kOut>(smem, i % S, a, w.row0_of(c), w.rows_of(c), w.hk, ltid);
      load_v<BV, Kern, NL>(smem, i % S, a, w.row0_of(c), m_cols ? 0 : w.rows_of(c), w.h, col0, ltid);
      load_slot<BV, NL, kOut, Kern>(smem, i % S, ws, slot0 + c, a.HV, w.h, ltid);
    };
    // Chunk i into stage i % S once the state warps are done with chunk i - S there.
    auto produce = [&](int i) {
      if (i >= S) wait_phase(&bars.empty[i % S], i / S - 1);
      load(i);
    };
    if constexpr (kQ1) {
      // One q tile (the layout's q(stage) is that tile for every stage): chunk i + 1 (q, k, v, slot)
      // is copied once the state warps have read chunk i's q, early in chunk i; by then they have
      // finished chunk i - 1, whose stage chunk i + 1 takes.
      if (count > 0) load(0);
      __pipeline_commit();
      for (int i = 0; i < count; ++i) {
        __pipeline_wait_prior(0);  // chunk i has landed ...
        if constexpr (!std::is_same_v<In, __half>) {
          ptx::named_bar_sync(kLoadBarrier, NL);  // ... for every load thread's copies
          qk_to_f16<In, BV, NL, true, Kern>(smem, i % S, ltid);
        }
        cuda::ptx::mbarrier_arrive(&bars.full[i % S]);  // chunk i is ready
        if (i + 1 < count) {
          wait_phase(&bars.empty[2], i);  // the state warps have read chunk i's q
          load(i + 1);
        }
        __pipeline_commit();
      }
      return;
    }
    if (count > 0) produce(0);
    __pipeline_commit();
    for (int i = 0; i < count; ++i) {
      if (i + 1 < count) produce(i + 1);
      __pipeline_commit();
      __pipeline_wait_prior(1);  // chunk i has landed (chunk i + 1 may be in flight) ...
      if constexpr (!std::is_same_v<In, __half>) {
        ptx::named_bar_sync(kLoadBarrier, NL);  // ... for every load thread's copies
        qk_to_f16<In, BV, NL, kOut, Kern>(smem, i % S, ltid);
      }
      // wgmma reads shared memory through the async proxy: this thread's copies and stores first.
      if constexpr (kWg) cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
      cuda::ptx::mbarrier_arrive(&bars.full[i % S]);  // chunk i is ready
    }
  }
}

template <class In, int BV, bool kOut, bool kCkpt = false, class Q = void>
__global__ void __launch_bounds__(warps_for(BV) * 32, 1)
    prefill_sm90_scan_kernel(const prefill::Args a, int v_blocks, const uint8_t* ws, const CpArgs cp, bool pingpong,
                             float* pool_scale) {
  scan_chunks<In, BV, kOut, kCkpt, Q>(a, v_blocks, ws, cp, pingpong, pool_scale);
}

}  // namespace gdn::sm90

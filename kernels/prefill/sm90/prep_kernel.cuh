// The two-pass schedule's first kernel: the state-independent preparation of every chunk at once.
// One CTA of four warps per (workspace slot, value head) (workspace.h): it finds its sequence and
// chunk, copies the chunk's q and k in, and runs the preparation (chunk_prep.cuh: scalars, K K^T
// and Q K^T, the gated inverse, A_g), then writes A_g, P_g and the scalars to its slot. Nothing
// here waits for another chunk, so the whole batch runs in parallel, four CTAs per SM; the scan
// kernel (scan_kernel.cuh) then carries only the state chain.
// kGroup: one CTA per (slot, q/k head) instead: q and k loaded, normed and multiplied once, then
// each value head of the GVA group in turn (its gates, the stores of the products kept in
// registers, the inverse, A_g, its slot). The same functions in the same order per head, so the
// same bits; the plan takes it where GVA is 2 or more and its grid has 1.5 CTAs per SM (plan.cpp).
// kPrepCtasPerSm CTAs per SM, the registers' bound.
#pragma once

#include <cuda/ptx>
#include <cuda_pipeline.h>

#include <cstdint>

#include "common/gdn_math.cuh"
#include "common/ptx/opaque.cuh"
#include "prefill/op.h"
#include "prefill/sm90/chunk_load.cuh"
#include "prefill/sm90/chunk_prep.cuh"
#include "prefill/sm90/pdl.cuh"
#include "prefill/sm90/segments.h"
#include "prefill/sm90/smem_layout.h"
#include "prefill/sm90/workspace.h"

namespace gdn::sm90 {

// The slot of value head h (workspace.h): A_g and P_g as they lie in shared memory, then the
// scalars. bulk (Plan::bulk_slot_writes): the runs of shared memory go out as bulk copies issued by
// one thread (the TMA unit reads shared memory: no register round trip a 16-byte piece), which it
// waits for before the buffers are written again or the CTA exits; the caller fences the group's
// writes to the async proxy (fence_slot_writes) before its barrier. Otherwise every thread stores
// 16-byte pieces.
__device__ __forceinline__ void write_slot(const uint8_t* smem, uint8_t* ws, int64_t slot, int h, int HV, int tid, bool bulk) {
  constexpr int NT = kPrepKernelThreads;
  constexpr SmemLayout L(0, kPrepKernel);
  uint8_t* out = ws + slot_offset(slot, h, HV);
#if __CUDA_ARCH__ >= 900  // bulk copies are sm_90+; the sm_80 family's plans never ask for them
  if (bulk) {
    if (tid == 0) {
      namespace cp = cuda::ptx;
      cp::cp_async_bulk(cp::space_global, cp::space_shared, out, smem + L.ag(0), uint32_t(kHalfTileBytes));
      cp::cp_async_bulk(cp::space_global, cp::space_shared, out + kSlotPg, smem + L.pg(0), uint32_t(kHalfTileBytes));
      cp::cp_async_bulk(cp::space_global, cp::space_shared, out + kSlotScalars, smem + L.scalars(0), uint32_t(kScalarBytes));
      cp::cp_async_bulk_commit_group();
      cp::cp_async_bulk_wait_group_read(cp::n32_t<0>{});
    }
    return;
  }
#endif
  for (int e = tid; e < kSlotBytes / 16; e += NT) {
    const int at = 16 * e;  // A_g, P_g, the scalars, whole and in order
    const uint8_t* src = at >= kSlotScalars     ? smem + L.scalars(0) + (at - kSlotScalars)
                         : at >= kHalfTileBytes ? smem + L.pg(0) + (at - kHalfTileBytes)
                                                : smem + L.ag(0) + at;
    *reinterpret_cast<uint4*>(out + 16 * e) = *reinterpret_cast<const uint4*>(src);
  }
}
// Before the barrier that precedes write_slot: this thread's shared-memory writes made visible to
// the bulk copies (the async proxy).
__device__ __forceinline__ void fence_slot_writes(bool bulk) {
#if __CUDA_ARCH__ >= 900
  if (bulk) cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
#endif
}

// The body of the preparation kernels (prefill_sm90_prep_kernel below, and prefill/sm80's).
template <class In, bool kGroup>
__device__ __forceinline__ void prepare_slot(const prefill::Args& a, uint8_t* ws, bool bulk) {
  constexpr int NT = kPrepKernelThreads;
  extern __shared__ __align__(1024) uint8_t smem[];
  // The kernels after this one may start their CTAs (Plan::pdl); they wait for its results.
  ptx::pdl_trigger();
  const int tid = int(threadIdx.x), group = a.HV / a.H;
  const int hk = kGroup ? int(blockIdx.y) : int(blockIdx.y) / group;  // the q/k head
  const int64_t slot = blockIdx.x;
  // The sequence of this slot (segments.h: the same search as the scan's segment slots).
  const int64_t n = sequence_of_slot(slot, a.N, [&](int64_t m) { return first_slot(a.cu_seqlens[m], m); });
  const int64_t bos = a.cu_seqlens[n], len = a.cu_seqlens[n + 1] - bos;
  const int64_t c = slot - first_slot(bos, n);
  if (c * kChunk >= len) return;  // a slot between two sequences (or of an empty one)
  const int rows = int(len - c * kChunk < kChunk ? len - c * kChunk : kChunk);
  const int64_t row0 = bos + c * kChunk;

  load_qk<0, kPrepKernel, NT>(smem, 0, a, row0, rows, hk, tid);
  __pipeline_commit();
  const PrepGroup<NT, 0> all{tid};
  // Token tid's gate words of value head h (threads 0..63).
  auto gate_of_head = [&](int h) { return tid < rows ? dev::load_gate(a.gate, row0 + tid, h, a.HV) : dev::GateIn{}; };
  if constexpr (!kGroup) {
    const int h = int(blockIdx.y);
    const dev::GateIn gate = gate_of_head(h);
    __pipeline_wait_prior(0);
    __syncthreads();
    prepare_chunk<In, 0, kPrepKernel>(all, smem, 0, 0, gate, a, rows);
    fence_slot_writes(bulk);
    __syncthreads();
    write_slot(smem, ws, slot, h, a.HV, tid, bulk);
  } else {
    __pipeline_wait_prior(0);
    __syncthreads();
    chunk_norms<In, 0, kPrepKernel>(all, smem, 0, 0, a, rows);  // rk, rq: the group's, kept in the scalars
    __syncthreads();
    HeldProducts held;  // this warp's K K^T / Q K^T tiles, kept for every value head of the group
    products_mma<0, kPrepKernel>(all, smem, 0, held);
    __syncthreads();  // the q/k tiles are dead: L and P_g go over them
    dev::GateIn gate = gate_of_head(hk * group);
    for (int j = 0; j < group; ++j) {
      const int h = hk * group + j;
      // An opaque copy of the thread index per head: ptxas re-derives the addresses from it instead
      // of holding them across the loop beside the products (16 bytes of spill otherwise).
      const PrepGroup<NT, 0> fresh{ptx::opaque(tid)};
      chunk_gates<0, kPrepKernel>(fresh, smem, 0, gate, a, rows);
      __syncthreads();
      if (j + 1 < group) gate = gate_of_head(h + 1);  // in flight while this head is prepared
      chunk_scalings<0, kPrepKernel>(fresh, smem, 0, a, rows);
      __syncthreads();
      products_store<0, kPrepKernel>(fresh, smem, 0, a.scale, held);
      __syncthreads();
      invert_into_ag<false, 0, kPrepKernel>(fresh, smem, 0);
      fence_slot_writes(bulk);
      __syncthreads();
      write_slot(smem, ws, slot, h, a.HV, tid, bulk);
      __syncthreads();  // the next head overwrites the tiles and scalars
    }
  }
}

template <class In, bool kGroup>
__global__ void __launch_bounds__(kPrepKernelThreads, kPrepCtasPerSm) prefill_sm90_prep_kernel(const prefill::Args a, uint8_t* ws, bool bulk) {
  prepare_slot<In, kGroup>(a, ws, bulk);
}

}  // namespace gdn::sm90

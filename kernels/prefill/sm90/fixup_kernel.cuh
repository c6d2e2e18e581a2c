// Context parallelism, the fixup (segments.h): the true start state of every segment, from the
// transition pass's per-segment maps, S_start(s + 1) = M_s S_start(s) + N_s (= N_s where the
// warm-up dropped M_s), in fp32 on CUDA cores. One CTA of kFixupThreads per (sequence, value
// head, kFixupCols state columns); M_s (64 KiB) and the CTA's columns of N_s are copied into
// shared memory one segment ahead, and M_s S_start(s) is summed in k slices (below: 0.85-0.96x
// the time of 4 rows x 1 column a thread; more threads per CTA are slower). The sequence's own initial state (h0 or its pool slot, state_ref.cuh) is read here
// only: the scan reads every segment's start from the buffer, so in the pool form no CTA reads a
// slot that another CTA writes. kMBuffers 1 (prefill/sm80 where a block may not have the two
// buffers' 180,224 bytes): the next M is copied only after the product with this one.
#pragma once

#include <cuda_pipeline.h>

#include <cstdint>
#include <type_traits>

#include "common/ptx/cp_async.cuh"
#include "prefill/op.h"
#include "prefill/sm90/fixup_layout.h"
#include "prefill/sm90/fragments.cuh"
#include "prefill/sm90/pdl.cuh"
#include "prefill/sm90/pool_8bit.cuh"
#include "prefill/sm90/segments.h"
#include "prefill/sm90/states.cuh"

namespace gdn::sm90 {

// Q: an 8-bit pool's format (pool_8bit.cuh; void for f32 / bf16), pool_scale its row scales: the
// sequence's slot is widened as code x scale, as the unsplit scan widens it.
template <class Q = void, int kMBuffers = 2, int kThreads = kFixupThreads>
__device__ __forceinline__ void fixup_segments(const prefill::Args& a, const CpArgs& cp, float* pool_scale) {
  static_assert(kMBuffers == 1 || kMBuffers == 2, "one or two M buffers");
  // kThreads / 32 k slices (fewer threads: fewer partial sums to keep, fixup_smem_bytes).
  constexpr int kSlices = kThreads / 32, kSliceK = kHeadDim / kSlices, kOutPerThread = kFixupNFloats / kThreads;
  static_assert(kSliceK % 4 == 0 && kFixupNFloats % kThreads == 0, "float4 of M per four k; whole outputs per thread");
  extern __shared__ __align__(16) float fsm[];
  float* const Nbuf = fsm + kMBuffers * kFixupMFloats;           // [2][K][kFixupCols], N_s's columns
  float* const S = Nbuf + 2 * kFixupNFloats;                      // [K][kFixupCols], the current start state
  float* const part = S + kFixupNFloats;                         // [slice][K][kFixupCols], the slices' sums
  // A programmatic dependent of the transition pass (Plan::pdl): the scan may start its CTAs, and
  // this grid waits here for the maps and flags. Without PDL both return at once.
  ptx::pdl_trigger();
  ptx::pdl_wait();
  const int tid = int(threadIdx.x);
  constexpr int kBlocks = kHeadDim / kFixupCols;
  const int64_t cta = blockIdx.x;
  const int col0 = int(cta % kBlocks) * kFixupCols, h = int((cta / kBlocks) % a.HV);
  const int64_t n = cta / kBlocks / a.HV;
  const int64_t bos = a.cu_seqlens[n], len = a.cu_seqlens[n + 1] - bos;
  const int64_t segs = segments_of(len, cp.seg_chunks), slot0 = first_segment(bos, n, cp.seg_chunks);
  auto dropped = [&](int64_t s) { return cp.warm[(slot0 + s) * a.HV + h] != 0; };

  const auto m_of = [&](int64_t s) { return fsm + (kMBuffers == 2 ? (s & 1) : 0) * kFixupMFloats; };
  // Segment s's M (unless dropped) and N columns into buffer s % 2, as one commit group.
  auto load_maps = [&](int64_t s) {
    const int64_t at = ((slot0 + s) * a.HV + h) * kStateFloats;
    if (!dropped(s)) {
      float* dst = m_of(s);
      for (int e = tid; e < kHeadDim * kHeadDim / 4; e += kThreads) {
        const int row = e / (kHeadDim / 4), piece = e % (kHeadDim / 4);
        ptx::cp_async_16_zfill(dst + row * kFixupMStride + 4 * piece, cp.m + at + row * kHeadDim + 4 * piece, true);
      }
    }
    float* dst = Nbuf + (s & 1) * kFixupNFloats;
    for (int e = tid; e < kFixupNFloats / 4; e += kThreads) {
      const int row = e / (kFixupCols / 4), piece = e % (kFixupCols / 4);
      ptx::cp_async_16_zfill(dst + row * kFixupCols + 4 * piece, cp.n + at + row * kHeadDim + col0 + 4 * piece, true);
    }
    __pipeline_commit();
  };
  if (segs > 1) load_maps(0);
  else __pipeline_commit();

  {
    const StateRef init = initial_state(a, n, h), out = buffer_state(cp.start, slot0, h, a.HV);
    [[maybe_unused]] Slot8 init8;
    if constexpr (!std::is_void_v<Q>) init8 = own_slot_8bit(a, pool_scale, n, h);
    for (int e = tid; e < kFixupNFloats; e += kThreads) {
      const int d = e / kFixupCols, c = e % kFixupCols;
      float x;
      if constexpr (std::is_void_v<Q>) x = init.read(d, col0 + c);
      else x = read_8bit<Q>(init8, d, col0 + c);
      S[e] = x;
      out.write(d, col0 + c, x);
    }
  }

  const int lane = tid & 31, slice = tid >> 5, k0 = slice * kSliceK;
  for (int64_t s = 0; s + 1 < segs; ++s) {
    if constexpr (kMBuffers == 2) {
      if (s + 2 < segs) load_maps(s + 1);
      else __pipeline_commit();
    }
    const bool drop = dropped(s);  // its load beside the copies' wait
    __pipeline_wait_prior(kMBuffers == 2 ? 1 : 0);
    __syncthreads();  // segment s's maps have landed for every thread; S holds S_start(s)
    if (!drop) {
      const float* M = m_of(s);
      float acc[kFixupRowsPerLane][kFixupCols] = {};
#pragma unroll
      for (int kq = 0; kq < kSliceK; kq += 4) {
        float4 m[kFixupRowsPerLane];
#pragma unroll
        for (int i = 0; i < kFixupRowsPerLane; ++i)
          m[i] = *reinterpret_cast<const float4*>(M + (lane + 32 * i) * kFixupMStride + k0 + kq);
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
          const float4 lo = *reinterpret_cast<const float4*>(S + (k0 + kq + kk) * kFixupCols);
          const float4 hi = *reinterpret_cast<const float4*>(S + (k0 + kq + kk) * kFixupCols + 4);
          const float sv[kFixupCols] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
          for (int i = 0; i < kFixupRowsPerLane; ++i) {
            const float mv = kk == 0 ? m[i].x : kk == 1 ? m[i].y : kk == 2 ? m[i].z : m[i].w;
#pragma unroll
            for (int c = 0; c < kFixupCols; ++c) acc[i][c] = fmaf(mv, sv[c], acc[i][c]);
          }
        }
      }
#pragma unroll
      for (int i = 0; i < kFixupRowsPerLane; ++i) {
        float* to = part + (slice * kHeadDim + lane + 32 * i) * kFixupCols;
        *reinterpret_cast<float4*>(to) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *reinterpret_cast<float4*>(to + 4) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
      }
    }
    __syncthreads();  // every slice's sums are in; every thread has read S and segment s's maps
    if constexpr (kMBuffers == 1)
      if (s + 2 < segs) load_maps(s + 1);  // into the M just read, beside this segment's sums
    const float* N = Nbuf + (s & 1) * kFixupNFloats;
    const StateRef out = buffer_state(cp.start, slot0 + s + 1, h, a.HV);
#pragma unroll
    for (int j = 0; j < kOutPerThread; ++j) {
      const int e = tid + kThreads * j, r = e / kFixupCols, c = e % kFixupCols;
      float x = N[e];
      if (!drop)
#pragma unroll
        for (int sl = 0; sl < kSlices; ++sl) x += part[sl * kFixupNFloats + e];
      S[e] = x;
      out.write(r, col0 + c, x);
    }
  }
}

template <class Q = void>
__global__ void __launch_bounds__(kFixupThreads, 1)
    prefill_sm90_fixup_kernel(const prefill::Args a, const CpArgs cp, float* pool_scale) {
  fixup_segments<Q, 2>(a, cp, pool_scale);
}

}  // namespace gdn::sm90

// Context parallelism, the fixup (segments.h): the true start state of every segment, from the
// transition pass's per-segment maps, S_start(s + 1) = M_s S_start(s) + N_s (= N_s where the
// warm-up dropped M_s), in fp32 on CUDA cores. One CTA of kFixupThreads per (sequence, value
// head, kFixupCols state columns); M_s (64 KiB) and the CTA's columns of N_s are copied into
// shared memory one segment ahead. The sequence's own initial state (h0 or its pool slot,
// state_ref.cuh) is read here only: the scan reads every segment's start from the buffer, so in
// the pool form no CTA reads a slot that another CTA writes.
#pragma once

#include <cuda_pipeline.h>

#include <cstdint>

#include "common/ptx/cp_async.cuh"
#include "prefill/op.h"
#include "prefill/sm90/fragments.cuh"
#include "prefill/sm90/segments.h"
#include "prefill/sm90/states.cuh"

namespace gdn::sm90 {

constexpr int kFixupCols = 8, kFixupThreads = 256;
constexpr int kFixupMStride = kHeadDim + 4;  // rows r .. r + 3 of a warp four banks apart: float4 row reads are conflict-free
constexpr int kFixupRowsPerThread = kHeadDim * kFixupCols / kFixupThreads;
constexpr int kFixupRowStep = kFixupThreads / kFixupCols;
constexpr int kFixupMFloats = kHeadDim * kFixupMStride, kFixupNFloats = kHeadDim * kFixupCols;
constexpr int kFixupSmemBytes = (2 * kFixupMFloats + 3 * kFixupNFloats) * 4;

__global__ void __launch_bounds__(kFixupThreads, 1) prefill_sm90_fixup_kernel(const prefill::Args a, const CpArgs cp) {
  extern __shared__ __align__(16) float fsm[];
  float* const S = fsm + 2 * kFixupMFloats + 2 * kFixupNFloats;  // [K][kFixupCols], the current start state
  // A programmatic dependent of the transition pass (Plan::pdl): the scan may start its CTAs, and
  // this grid waits here for the maps and flags. Without PDL both return at once.
  cudaTriggerProgrammaticLaunchCompletion();
  cudaGridDependencySynchronize();
  const int tid = int(threadIdx.x);
  constexpr int kBlocks = kHeadDim / kFixupCols;
  const int64_t cta = blockIdx.x;
  const int col0 = int(cta % kBlocks) * kFixupCols, h = int((cta / kBlocks) % a.HV);
  const int64_t n = cta / kBlocks / a.HV;
  const int64_t bos = a.cu_seqlens[n], len = a.cu_seqlens[n + 1] - bos;
  const int64_t segs = segments_of(len, cp.seg_chunks), slot0 = first_segment(bos, n, cp.seg_chunks);
  auto dropped = [&](int64_t s) { return cp.warm[(slot0 + s) * a.HV + h] != 0; };

  // Segment s's M (unless dropped) and N columns into buffer s % 2, as one commit group.
  auto load_maps = [&](int64_t s) {
    const int64_t at = ((slot0 + s) * a.HV + h) * kStateFloats;
    if (!dropped(s)) {
      float* dst = fsm + (s & 1) * kFixupMFloats;
      for (int e = tid; e < kHeadDim * kHeadDim / 4; e += kFixupThreads) {
        const int row = e / (kHeadDim / 4), piece = e % (kHeadDim / 4);
        ptx::cp_async_16_zfill(dst + row * kFixupMStride + 4 * piece, cp.m + at + row * kHeadDim + 4 * piece, true);
      }
    }
    float* dst = fsm + 2 * kFixupMFloats + (s & 1) * kFixupNFloats;
    for (int e = tid; e < kFixupNFloats / 4; e += kFixupThreads) {
      const int row = e / (kFixupCols / 4), piece = e % (kFixupCols / 4);
      ptx::cp_async_16_zfill(dst + row * kFixupCols + 4 * piece, cp.n + at + row * kHeadDim + col0 + 4 * piece, true);
    }
    __pipeline_commit();
  };
  if (segs > 1) load_maps(0);
  else __pipeline_commit();

  {
    const StateRef init = initial_state(a, n, h), out = buffer_state(cp.start, slot0, h, a.HV);
    for (int e = tid; e < kFixupNFloats; e += kFixupThreads) {
      const int d = e / kFixupCols, c = e % kFixupCols;
      const float x = init.read(d, col0 + c);
      S[e] = x;
      out.write(d, col0 + c, x);
    }
  }

  const int c = tid % kFixupCols, r0 = tid / kFixupCols;  // rows r0 + kFixupRowStep i
  for (int64_t s = 0; s + 1 < segs; ++s) {
    if (s + 2 < segs) load_maps(s + 1);
    else __pipeline_commit();
    __pipeline_wait_prior(1);
    __syncthreads();  // segment s's maps have landed for every thread; S holds S_start(s)
    const float* N = fsm + 2 * kFixupMFloats + (s & 1) * kFixupNFloats;
    float acc[kFixupRowsPerThread];
#pragma unroll
    for (int i = 0; i < kFixupRowsPerThread; ++i) acc[i] = N[(r0 + kFixupRowStep * i) * kFixupCols + c];
    if (!dropped(s)) {
      const float* M = fsm + (s & 1) * kFixupMFloats;
#pragma unroll 4
      for (int k = 0; k < kHeadDim; k += 4) {
        const float s0 = S[k * kFixupCols + c], s1 = S[(k + 1) * kFixupCols + c];
        const float s2 = S[(k + 2) * kFixupCols + c], s3 = S[(k + 3) * kFixupCols + c];
#pragma unroll
        for (int i = 0; i < kFixupRowsPerThread; ++i) {
          const float4 m = *reinterpret_cast<const float4*>(M + (r0 + kFixupRowStep * i) * kFixupMStride + k);
          acc[i] = fmaf(m.x, s0, acc[i]);
          acc[i] = fmaf(m.y, s1, acc[i]);
          acc[i] = fmaf(m.z, s2, acc[i]);
          acc[i] = fmaf(m.w, s3, acc[i]);
        }
      }
    }
    __syncthreads();  // every thread has read S and segment s's maps
    const StateRef out = buffer_state(cp.start, slot0 + s + 1, h, a.HV);
#pragma unroll
    for (int i = 0; i < kFixupRowsPerThread; ++i) {
      const int r = r0 + kFixupRowStep * i;
      S[r * kFixupCols + c] = acc[i];
      out.write(r, col0 + c, acc[i]);
    }
  }
}

}  // namespace gdn::sm90

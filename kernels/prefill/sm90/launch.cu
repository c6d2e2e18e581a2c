// The one translation unit of the prefill/sm90 kernels (built for sm_90a only): every
// instantiation of the two-pass schedule (preparation, transition pass, fixup, scan) and the fused
// one that a plan can reach, launched per plan; the scan and the fused kernel once more with
// checkpoints (docs/method.md 2.4).
#include <cuda_runtime.h>

#include <cstdint>
#include <fmt/format.h>
#include <type_traits>
#include <utility>

#include "core/cuda_check.h"
#include "core/errors.h"
#include "core/state_quant.h"
#include "prefill/sm90/fixup_kernel.cuh"
#include "prefill/sm90/fused_kernel.cuh"
#include "prefill/sm90/launch.h"
#include "prefill/sm90/prep_kernel.cuh"
#include "prefill/sm90/scan_kernel.cuh"
#include "prefill/sm90/segments.h"
#include "prefill/sm90/workspace.h"
#include "prefill/sm90/workspace_buffer.h"

namespace gdn::sm90 {
namespace {

template <class K> void set_smem(K kernel, int bytes) {
  // Not a stream operation: allowed while a graph is being captured.
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

// `kernel` on `stream`; with pdl as a programmatic dependent of the kernel before it there: its CTAs
// may start as that one's retire, and wait in cudaGridDependencySynchronize for its results.
template <class... Params, class... Args>
void launch_after(bool pdl, void (*kernel)(Params...), int64_t ctas, int threads, int smem, cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute dependent{};
  dependent.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  dependent.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(unsigned(ctas));
  config.blockDim = dim3(unsigned(threads));
  config.dynamicSmemBytes = size_t(smem);
  config.stream = stream;
  config.attrs = &dependent;
  config.numAttrs = pdl ? 1 : 0;
  CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

// The scan (kOut) or the transition pass at block_v BV; the scan with checkpoints (kCkpt) is a
// kernel of its own, so the one without keeps its code. Q: an 8-bit pool's format (the scan only,
// one kernel per format, with the checkpoint cursor whether or not J > 0), pool_scale its scales.
template <class In, int BV, bool kOut, class Q = void>
void launch_scan(const prefill::Args& a, int64_t slots, const uint8_t* ws, const CpArgs& cp, bool pingpong, bool pdl,
                 cudaStream_t stream, float* pool_scale) {
  auto scan = prefill_sm90_scan_kernel<In, BV, kOut>;
  if constexpr (!std::is_void_v<Q>) scan = prefill_sm90_scan_kernel<In, BV, true, true, Q>;
  else if constexpr (kOut)
    if (a.J > 0) scan = prefill_sm90_scan_kernel<In, BV, kOut, true>;
  const int smem = SmemLayout(BV, kScanKernel).bytes, v_blocks = (kOut ? 1 : 2) * kHeadDim / BV;
  set_smem(scan, smem);
  const int64_t ctas = int64_t(v_blocks) * a.HV * slots;
  if (ctas > int64_t(INT32_MAX))
    throw runtime_error(fmt::format("prefill/sm90: {} scan CTAs do not fit one grid (a shorter cp segment?)", ctas));
  launch_after(pdl, scan, ctas, warps_for(BV) * 32, smem, stream, a, v_blocks, ws, cp, pingpong, pool_scale);
}

// The scan at block_v 32, 64 or 128; the transition pass at cp_block_v 32 or 64.
template <class In, bool kOut, class Q = void>
void launch_scan_at(int block_v, const prefill::Args& a, int64_t slots, const uint8_t* ws, const CpArgs& cp, bool pingpong,
                    bool pdl, cudaStream_t stream, float* pool_scale = nullptr) {
  if (block_v == 32) return launch_scan<In, 32, kOut, Q>(a, slots, ws, cp, false, pdl, stream, pool_scale);
  if (block_v == 64) return launch_scan<In, 64, kOut, Q>(a, slots, ws, cp, false, pdl, stream, pool_scale);
  if constexpr (kOut) {
    if (block_v == 128) return launch_scan<In, 128, kOut, Q>(a, slots, ws, cp, pingpong, pdl, stream, pool_scale);
  }
  throw runtime_error(fmt::format("prefill/sm90: no {} at block_v {}", kOut ? "scan" : "transition pass", block_v));
}

// The two-pass schedule: every chunk prepared into the workspace, then the scan (same stream, in
// order). With context parallelism (segments.h) the transition pass and the fixup run between the
// two. The preparation waits for whatever the stream ran before; with Plan::pdl the kernels after
// it are programmatic dependents, each waiting for the one before (cudaGridDependencySynchronize).
// Q: an 8-bit pool's format (the fixup and the scan read and write it), pool_scale its row scales.
template <class In, class Q = void>
void launch_two_pass(const prefill::Args& a, const Plan& p, cudaStream_t stream, float* pool_scale = nullptr) {
  const int L = p.seg_chunks;
  CpArgs cp;
  uint8_t* ws = two_pass_workspace(a.T, a.N, a.HV, L, stream, &cp);
  const auto prep = p.prep_group ? prefill_sm90_prep_kernel<In, true> : prefill_sm90_prep_kernel<In, false>;
  const int prep_smem = SmemLayout(0, kPrepKernel).bytes;
  set_smem(prep, prep_smem);
  prep<<<dim3(unsigned(slot_count(a.T, a.N)), unsigned(p.prep_group ? a.H : a.HV)), kPrepKernelThreads, size_t(prep_smem),
         stream>>>(a, ws, p.bulk_slot_writes);
  CUDA_CHECK(cudaGetLastError());
  const int64_t slots = segment_count(a.T, a.N, L);
  if (L > 0) {
    launch_scan_at<In, false>(p.cp_block_v, a, slots, ws, cp, false, p.pdl, stream);
    const auto fixup = prefill_sm90_fixup_kernel<Q>;
    set_smem(fixup, kFixupSmemBytes);
    launch_after(p.pdl, fixup, a.N * a.HV * (kHeadDim / kFixupCols), kFixupThreads, kFixupSmemBytes, stream, a, cp, pool_scale);
  }
  launch_scan_at<In, true, Q>(p.block_v, a, slots, ws, cp, p.pingpong_at(p.block_v), p.pdl, stream, pool_scale);
}

// The fused schedule: one kernel, one CTA per (value head, sequence); no workspace.
template <class In> void launch_fused(const prefill::Args& a, const Plan& p, cudaStream_t stream) {
  const auto kernel = a.J > 0 ? prefill_sm90_fused_kernel<In, true> : prefill_sm90_fused_kernel<In>;
  const int smem = SmemLayout(kFusedBlockV, kFusedKernel).bytes;
  set_smem(kernel, smem);
  const int v_blocks = kHeadDim / kFusedBlockV;
  const int64_t ctas = int64_t(v_blocks) * a.HV * a.N;
  if (ctas > int64_t(INT32_MAX)) throw runtime_error(fmt::format("prefill/sm90: {} fused CTAs do not fit one grid", ctas));
  kernel<<<dim3(unsigned(ctas)), unsigned(kFusedThreads), size_t(smem), stream>>>(a, v_blocks,
                                                                                                 p.pingpong_at(kFusedBlockV));
  CUDA_CHECK(cudaGetLastError());
}

template <class In> void launch_schedule(const prefill::Args& a, const Plan& p, cudaStream_t stream, float* pool_scale) {
  if (quant::is_8bit(a.state_dtype)) {
    if (p.schedule == Schedule::fused) throw runtime_error("prefill/sm90: 8-bit state pools run the two_pass schedule");
    if (pool_scale == nullptr) throw runtime_error("prefill/sm90: an 8-bit state pool needs its pool_scale tensor");
    if (a.state_dtype == DType::fp8e4m3) return launch_two_pass<In, Fp8Format>(a, p, stream, pool_scale);
    return launch_two_pass<In, Int8Format>(a, p, stream, pool_scale);
  }
  if (p.schedule == Schedule::fused) {
    if (p.block_v != kFusedBlockV) throw runtime_error(fmt::format("prefill/sm90: no fused kernel at block_v {}", p.block_v));
    return launch_fused<In>(a, p, stream);
  }
  launch_two_pass<In>(a, p, stream);
}

}  // namespace

void launch(const prefill::Args& a, const Plan& p, void* stream, float* pool_scale) {
  if (a.K != kHeadDim || a.V != kHeadDim || a.N < 1 || a.HV % a.H != 0)
    throw runtime_error(fmt::format("prefill/sm90: unsupported call (K {}, V {}, N {}, H {}, HV {})", a.K, a.V, a.N, a.H, a.HV));
  const auto s = static_cast<cudaStream_t>(stream);
  if (a.input_dtype == DType::f16) launch_schedule<__half>(a, p, s, pool_scale);
  else launch_schedule<__nv_bfloat16>(a, p, s, pool_scale);
}

}  // namespace gdn::sm90

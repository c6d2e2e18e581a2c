// The one translation unit of the prefill/sm90 kernels (built for sm_90a only): every
// instantiation of kernels v1, v2, v3 and v4, launched per plan.
#include <cuda_runtime.h>

#include <cstdint>
#include <fmt/format.h>
#include <utility>

#include "core/cuda_check.h"
#include "core/errors.h"
#include "prefill/sm90/kernel.cuh"
#include "prefill/sm90/kernel_v2.cuh"
#include "prefill/sm90/kernel_v3.cuh"
#include "prefill/sm90/kernel_v4.cuh"
#include "prefill/sm90/launch.h"
#include "prefill/sm90/fixup_kernel.cuh"
#include "prefill/sm90/prep_kernel.cuh"
#include "prefill/sm90/segments.h"
#include "prefill/sm90/workspace.h"
#include "prefill/sm90/workspace_buffer.h"

namespace gdn::sm90 {
namespace {

template <class In, int BV, int Ver> constexpr auto kernel_of() {
  if constexpr (Ver == kKernelV2) return prefill_sm90_v2_kernel<In, BV>;
  else return prefill_sm90_kernel<In, BV>;
}

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

template <class In, int BV, int Ver> void launch_typed(const prefill::Args& a, const Plan& p, cudaStream_t stream) {
  const auto kernel = kernel_of<In, BV, Ver>();
  const int smem = p.smem_bytes();
  set_smem(kernel, smem);
  const int64_t ctas = int64_t(p.v_blocks(a.V)) * a.HV * a.N;  // v1, v2: one CTA per (value block, head, sequence)
  kernel<<<dim3(unsigned(ctas)), unsigned(p.warps() * 32), size_t(smem), stream>>>(a, p.v_blocks(a.V));
  CUDA_CHECK(cudaGetLastError());
}

template <class In, int BV, bool kOut, bool kWg, int kSlot>
void launch_scan(const prefill::Args& a, int64_t slots, const uint8_t* ws, const CpArgs& cp, bool pingpong, bool pdl,
                 cudaStream_t stream) {
  const auto scan = prefill_sm90_v3_kernel<In, BV, kOut, kWg, kSlot>;
  const int smem = SmemLayout(BV, kKernelV3).bytes, v_blocks = (kOut ? 1 : 2) * kHeadDim / BV;
  set_smem(scan, smem);
  const int64_t ctas = int64_t(v_blocks) * a.HV * slots;
  if (ctas > int64_t(INT32_MAX))
    throw runtime_error(fmt::format("prefill/sm90: {} scan CTAs do not fit one grid (a shorter cp segment?)", ctas));
  launch_after(pdl, scan, ctas, warps_for(BV, kKernelV3) * 32, smem, stream, a, v_blocks, ws, cp, pingpong);
}

template <class In, bool kOut, int kSlot>
void launch_scan_at(int block_v, bool wgmma, const prefill::Args& a, int64_t slots, const uint8_t* ws, const CpArgs& cp,
                    bool pingpong, bool pdl, cudaStream_t stream) {
  if (block_v == 32) return launch_scan<In, 32, kOut, false, kSlot>(a, slots, ws, cp, false, pdl, stream);
  if (block_v == 64 && wgmma) return launch_scan<In, 64, kOut, true, kSlot>(a, slots, ws, cp, false, pdl, stream);
  if (block_v == 64) return launch_scan<In, 64, kOut, false, kSlot>(a, slots, ws, cp, false, pdl, stream);
  if constexpr (kOut) {  // the transition pass runs at cp_block_v 32 or 64
    if (block_v == 128 && wgmma) return launch_scan<In, 128, kOut, true, kSlot>(a, slots, ws, cp, pingpong, pdl, stream);
  }
  throw runtime_error(fmt::format("prefill/sm90: no kernel v3 for block_v {}", block_v));
}

// The preparation kernel of a plan: per value head or per q/k head (prep_group), the slot's form,
// the chunk inverse's form (InverseForm). The lean slot is built with the hier and TF32 inverses
// only (plan.cpp checks).
template <class In, bool kGroup, int kSlot> auto prep_kernel_of(int inverse) {
  if constexpr (kSlot != kSlotLean)
    if (inverse == kInverseF16) return prefill_sm90_prep_kernel<In, kGroup, kSlot, kInverseF16>;
  return inverse == kInverseHier ? prefill_sm90_prep_kernel<In, kGroup, kSlot, kInverseHier>
                                 : prefill_sm90_prep_kernel<In, kGroup, kSlot, kInverseTf32>;
}
template <class In, int kSlot> auto prep_kernel_of(const Plan& p) {
  if (p.prep_group) return prep_kernel_of<In, true, kSlot>(p.inverse);
  return prep_kernel_of<In, false, kSlot>(p.inverse);
}

// Kernel v3: every chunk prepared into the workspace, then the scan (same stream, in order). With
// context parallelism (segments.h) the transition pass and the fixup run between the two. The
// preparation waits for whatever the stream ran before; with Plan::pdl the kernels after it are
// programmatic dependents, each waiting for the one before (cudaGridDependencySynchronize).
template <class In, int kSlot> void launch_v3(const prefill::Args& a, const Plan& p, cudaStream_t stream) {
  const int L = p.seg_chunks;
  const int64_t prep_bytes = (workspace_bytes(a.T, a.N, a.HV, kSlot) + 255) / 256 * 256;
  const int64_t seg_bytes = segment_buffer_bytes(a.T, a.N, a.HV, L);
  uint8_t* ws = workspace_for(prep_bytes + 3 * seg_bytes + segment_flag_bytes(a.T, a.N, a.HV, L), stream);
  CpArgs cp;
  cp.seg_chunks = L;
  if (L > 0) {
    cp.m = reinterpret_cast<float*>(ws + prep_bytes);
    cp.n = reinterpret_cast<float*>(ws + prep_bytes + seg_bytes);
    cp.start = reinterpret_cast<float*>(ws + prep_bytes + 2 * seg_bytes);
    cp.warm = reinterpret_cast<int*>(ws + prep_bytes + 3 * seg_bytes);
  }
  const auto prep = prep_kernel_of<In, kSlot>(p);
  const int prep_smem = SmemLayout(0, kPrepKernel).bytes;
  set_smem(prep, prep_smem);
  prep<<<dim3(unsigned(slot_count(a.T, a.N)), unsigned(p.prep_group ? a.H : a.HV)), kPrepKernelThreads, size_t(prep_smem),
         stream>>>(a, ws, p.bulk_slot_writes);
  CUDA_CHECK(cudaGetLastError());
  const int64_t slots = segment_count(a.T, a.N, L);
  if (L > 0) {
    launch_scan_at<In, false, kSlot>(p.cp_block_v, p.wgmma_at(p.cp_block_v), a, slots, ws, cp, false, p.pdl, stream);
    set_smem(prefill_sm90_fixup_kernel, kFixupSmemBytes);
    launch_after(p.pdl, prefill_sm90_fixup_kernel, a.N * a.HV * (kHeadDim / kFixupCols), kFixupThreads, kFixupSmemBytes, stream, a, cp);
  }
  launch_scan_at<In, true, kSlot>(p.block_v, p.wgmma_at(p.block_v), a, slots, ws, cp, p.pingpong_at(p.block_v), p.pdl, stream);
}

// Kernel v4: one fused kernel, one CTA per (value block, head, sequence); no workspace.
template <class In, int BV> void launch_v4(const prefill::Args& a, const Plan& p, cudaStream_t stream) {
  // The hier inverse (v4's default since the tenth session) or the TF32 one (inverse=tf32).
  const auto kernel = p.inverse == kInverseHier ? prefill_sm90_v4_kernel<In, BV, kInverseHier> : prefill_sm90_v4_kernel<In, BV>;
  const int smem = SmemLayout(BV, kKernelV4).bytes;
  set_smem(kernel, smem);
  const int v_blocks = kHeadDim / BV;
  const int64_t ctas = int64_t(v_blocks) * a.HV * a.N;
  if (ctas > int64_t(INT32_MAX)) throw runtime_error(fmt::format("prefill/sm90: {} v4 CTAs do not fit one grid", ctas));
  kernel<<<dim3(unsigned(ctas)), unsigned(warps_for(BV, kKernelV4) * 32), size_t(smem), stream>>>(a, v_blocks, p.pingpong_at(BV));
  CUDA_CHECK(cudaGetLastError());
  GDN_V4_TRACE_DO(print_v4_trace<<<1, 1, 0, stream>>>();)  // a diagnostic build (phase_trace.cuh)
}

template <class In> void launch_block(const prefill::Args& a, const Plan& p, cudaStream_t stream) {
  if (p.kernel == kKernelV4) {
    if (p.block_v == 64) return launch_v4<In, 64>(a, p, stream);
    if (p.block_v == 128) return launch_v4<In, 128>(a, p, stream);
  } else if (p.kernel == kKernelV3) {
    switch (p.slot) {
      case kSlotPacked: return launch_v3<In, kSlotPacked>(a, p, stream);
      case kSlotLean: return launch_v3<In, kSlotLean>(a, p, stream);
      default: return launch_v3<In, kSlotFull>(a, p, stream);
    }
  } else if (p.kernel == kKernelV2) {
    switch (p.block_v) {
      case 32: return launch_typed<In, 32, kKernelV2>(a, p, stream);
      case 64: return launch_typed<In, 64, kKernelV2>(a, p, stream);
    }
  } else if (p.kernel == kKernelV1) {
    switch (p.block_v) {
      case 32: return launch_typed<In, 32, kKernelV1>(a, p, stream);
      case 64: return launch_typed<In, 64, kKernelV1>(a, p, stream);
      case 128: return launch_typed<In, 128, kKernelV1>(a, p, stream);
    }
  }
  throw runtime_error(fmt::format("prefill/sm90: no kernel v{} for block_v {}", p.kernel, p.block_v));
}

}  // namespace

void launch(const prefill::Args& a, const Plan& p, void* stream) {
  if (a.K != kHeadDim || a.V != kHeadDim || a.N < 1 || a.HV % a.H != 0)
    throw runtime_error(fmt::format("prefill/sm90: unsupported call (K {}, V {}, N {}, H {}, HV {})", a.K, a.V, a.N, a.H, a.HV));
  const auto s = static_cast<cudaStream_t>(stream);
  if (a.input_dtype == DType::f16) launch_block<__half>(a, p, s);
  else launch_block<__nv_bfloat16>(a, p, s);
}

}  // namespace gdn::sm90

// The one translation unit of the prefill/sm80 kernels (sm_80 SASS and compute_80 PTX): the two-pass
// schedule of prefill/sm90 on mma.sync alone. The preparation is sm90's prepare_slot (cp.async
// copies, the products and the hier inverse on mma.sync, 16-byte slot stores); the scan is sm90's
// scan_chunks at block_v 32 (mma.sync state warps, cp.async loads) with two stages, which fit an
// sm_80 CTA where three do not, or three where the device allows them (Plan::stages); a split adds
// sm90's transition pass (the scan without outputs) and fixup. The kernels are named for this
// family, so timings and ptxas reports say which family ran.
#include <cuda_runtime.h>

#include <cstdint>
#include <fmt/format.h>

#include "core/cuda_check.h"
#include "core/errors.h"
#include "core/state_quant.h"
#include "prefill/sm80/launch.h"
#include "prefill/sm90/fixup_kernel.cuh"
#include "prefill/sm90/prep_kernel.cuh"
#include "prefill/sm90/scan_kernel.cuh"
#include "prefill/sm90/segments.h"
#include "prefill/sm90/workspace.h"
#include "prefill/sm90/workspace_buffer.h"

namespace gdn::sm80 {

template <class In, bool kGroup>
__global__ void __launch_bounds__(sm90::kPrepKernelThreads, sm90::kPrepCtasPerSm)
    prefill_sm80_prep_kernel(const prefill::Args a, uint8_t* ws) {
  sm90::prepare_slot<In, kGroup>(a, ws, false);
}

// The scan (kOut) at block_v BV (32 or 64: two or four mma.sync state warps), or the transition
// pass of a context-parallel split at block_v 32. Kern: the layout, sm90::kScan2Kernel (two
// stages), sm90::kScanKernel (three) or sm90::kScanQ1Kernel (two, one q tile; block_v 32).
template <class In, bool kOut, int Kern, int BV>
__global__ void __launch_bounds__(sm90::warps_for(BV) * 32, 1)
    prefill_sm80_scan_kernel(const prefill::Args a, const uint8_t* ws, const sm90::CpArgs cp) {
  sm90::scan_chunks<In, BV, kOut, false, void, Kern, true>(a, (kOut ? 1 : 2) * sm90::kHeadDim / BV, ws, cp, false, nullptr);
}

// The split's fixup with one or two M buffers (Plan::fixup_m_buffers) and kThreads threads
// (Plan::fixup_threads).
template <int kMBuffers, int kThreads>
__global__ void __launch_bounds__(kThreads, 1) prefill_sm80_fixup_kernel(const prefill::Args a, const sm90::CpArgs cp) {
  sm90::fixup_segments<void, kMBuffers, kThreads>(a, cp, nullptr);
}

namespace {

template <class K> void set_smem(K kernel, int bytes) {
  // Not a stream operation: allowed while a graph is being captured.
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

// The scan (kOut) at BV or the transition pass (BV 32) over `slots` segment slots.
template <class In, bool kOut, int BV>
void launch_scan(const prefill::Args& a, const Plan& p, int64_t slots, const uint8_t* ws, const sm90::CpArgs& cp,
                 cudaStream_t stream) {
  auto scan = p.stages == 3 ? prefill_sm80_scan_kernel<In, kOut, sm90::kScanKernel, BV>
                            : prefill_sm80_scan_kernel<In, kOut, sm90::kScan2Kernel, BV>;
  if constexpr (BV == 32)
    if (p.single_q) scan = prefill_sm80_scan_kernel<In, kOut, sm90::kScanQ1Kernel, BV>;
  if (p.single_q && BV != 32) throw runtime_error("prefill/sm80: one q tile at block_v 32 only");
  const int smem = scan_smem_bytes(BV, p.stages, p.single_q);
  set_smem(scan, smem);
  const int64_t ctas = int64_t((kOut ? 1 : 2) * sm90::kHeadDim / BV) * a.HV * slots;
  if (ctas > int64_t(INT32_MAX))
    throw runtime_error(fmt::format("prefill/sm80: {} {} CTAs do not fit one grid", ctas, kOut ? "scan" : "transition"));
  scan<<<dim3(unsigned(ctas)), unsigned(sm90::warps_for(BV) * 32), size_t(smem), stream>>>(a, ws, cp);
  CUDA_CHECK(cudaGetLastError());
}

// The preparation, then (with a split) the transition pass and the fixup, then the scan: one
// stream, in order. The workspace holds the prepared slots and the split's buffers, as sm90's.
template <class In> void launch_two_pass(const prefill::Args& a, const Plan& p, cudaStream_t stream) {
  const int L = p.seg_chunks;
  sm90::CpArgs cp;
  uint8_t* ws = sm90::two_pass_workspace(a.T, a.N, a.HV, L, stream, &cp);
  const auto prep = p.prep_group ? prefill_sm80_prep_kernel<In, true> : prefill_sm80_prep_kernel<In, false>;
  set_smem(prep, prep_smem_bytes());
  prep<<<dim3(unsigned(sm90::slot_count(a.T, a.N)), unsigned(p.prep_group ? a.H : a.HV)), sm90::kPrepKernelThreads,
         size_t(prep_smem_bytes()), stream>>>(a, ws);
  CUDA_CHECK(cudaGetLastError());
  const int64_t slots = sm90::segment_count(a.T, a.N, L);
  if (L > 0) {
    launch_scan<In, false, kBlockV>(a, p, slots, ws, cp, stream);
    auto fixup = p.fixup_m_buffers == 1 ? prefill_sm80_fixup_kernel<1, 256> : prefill_sm80_fixup_kernel<2, 256>;
    if (p.fixup_threads == 128) {
      if (p.fixup_m_buffers != 1) throw runtime_error("prefill/sm80: the fixup of 128 threads keeps one M buffer");
      fixup = prefill_sm80_fixup_kernel<1, 128>;
    }
    const int smem = sm90::fixup_smem_bytes(p.fixup_m_buffers, p.fixup_threads);
    set_smem(fixup, smem);
    fixup<<<dim3(unsigned(a.N * a.HV * (sm90::kHeadDim / sm90::kFixupCols))), unsigned(p.fixup_threads), size_t(smem), stream>>>(a, cp);
    CUDA_CHECK(cudaGetLastError());
  }
  if (p.block_v == 64) launch_scan<In, true, 64>(a, p, slots, ws, cp, stream);
  else launch_scan<In, true, kBlockV>(a, p, slots, ws, cp, stream);
}

}  // namespace

void launch(const prefill::Args& a, const Plan& p, void* stream) {
  if (a.K != sm90::kHeadDim || a.V != sm90::kHeadDim || a.N < 1 || a.HV % a.H != 0 || a.J > 0 || quant::is_8bit(a.state_dtype))
    throw runtime_error(fmt::format("prefill/sm80: unsupported call (K {}, V {}, N {}, H {}, HV {}, J {}, state {})", a.K, a.V,
                                    a.N, a.H, a.HV, a.J, to_string(a.state_dtype)));
  const auto s = static_cast<cudaStream_t>(stream);
  if (a.input_dtype == DType::f16) launch_two_pass<__half>(a, p, s);
  else launch_two_pass<__nv_bfloat16>(a, p, s);
}

}  // namespace gdn::sm80

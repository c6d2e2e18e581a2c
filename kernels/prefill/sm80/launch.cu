// The one translation unit of the prefill/sm80 kernels (sm_80 SASS and compute_80 PTX): the two-pass
// schedule of prefill/sm90 on mma.sync alone. The preparation is sm90's prepare_slot (cp.async
// copies, the products and the hier inverse on mma.sync, 16-byte slot stores); the scan is sm90's
// scan_chunks at block_v 32 (mma.sync state warps, cp.async loads) with two stages, which fit an
// sm_80 CTA where three do not, or three where the device allows them (Plan::stages). The kernels are named for this family, so timings and ptxas
// reports say which family ran.
#include <cuda_runtime.h>

#include <cstdint>
#include <fmt/format.h>

#include "core/cuda_check.h"
#include "core/errors.h"
#include "core/state_quant.h"
#include "prefill/sm80/launch.h"
#include "prefill/sm90/prep_kernel.cuh"
#include "prefill/sm90/scan_kernel.cuh"
#include "prefill/sm90/workspace.h"
#include "prefill/sm90/workspace_buffer.h"

namespace gdn::sm80 {

template <class In, bool kGroup>
__global__ void __launch_bounds__(sm90::kPrepKernelThreads, sm90::kPrepCtasPerSm)
    prefill_sm80_prep_kernel(const prefill::Args a, uint8_t* ws) {
  sm90::prepare_slot<In, kGroup>(a, ws, false);
}

// Kern: the layout, sm90::kScan2Kernel (two stages) or sm90::kScanKernel (three).
template <class In, int Kern>
__global__ void __launch_bounds__(sm90::warps_for(kBlockV) * 32, 1) prefill_sm80_scan_kernel(const prefill::Args a, const uint8_t* ws) {
  sm90::scan_chunks<In, kBlockV, true, false, void, Kern>(a, sm90::kHeadDim / kBlockV, ws, sm90::CpArgs{}, false, nullptr);
}

namespace {

template <class K> void set_smem(K kernel, int bytes) {
  // Not a stream operation: allowed while a graph is being captured.
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

template <class In> void launch_two_pass(const prefill::Args& a, const Plan& p, cudaStream_t stream) {
  uint8_t* ws = sm90::workspace_for(sm90::workspace_bytes(a.T, a.N, a.HV), stream);
  const auto prep = p.prep_group ? prefill_sm80_prep_kernel<In, true> : prefill_sm80_prep_kernel<In, false>;
  set_smem(prep, prep_smem_bytes());
  prep<<<dim3(unsigned(sm90::slot_count(a.T, a.N)), unsigned(p.prep_group ? a.H : a.HV)), sm90::kPrepKernelThreads,
         size_t(prep_smem_bytes()), stream>>>(a, ws);
  CUDA_CHECK(cudaGetLastError());
  const auto scan = p.stages == 3 ? prefill_sm80_scan_kernel<In, sm90::kScanKernel> : prefill_sm80_scan_kernel<In, sm90::kScan2Kernel>;
  const int smem = scan_smem_bytes(p.stages);
  set_smem(scan, smem);
  const int64_t ctas = int64_t(sm90::kHeadDim / kBlockV) * a.HV * a.N;
  if (ctas > int64_t(INT32_MAX)) throw runtime_error(fmt::format("prefill/sm80: {} scan CTAs do not fit one grid", ctas));
  scan<<<dim3(unsigned(ctas)), unsigned(sm90::warps_for(kBlockV) * 32), size_t(smem), stream>>>(a, ws);
  CUDA_CHECK(cudaGetLastError());
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

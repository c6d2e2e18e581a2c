// The one translation unit of the prefill/sm90 kernels (built for sm_90a only): every
// instantiation of kernels v1, v2 and v3, launched per plan.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "core/cuda_check.h"
#include "core/errors.h"
#include "prefill/sm90/kernel.cuh"
#include "prefill/sm90/kernel_v2.cuh"
#include "prefill/sm90/kernel_v3.cuh"
#include "prefill/sm90/launch.h"
#include "prefill/sm90/prep_kernel.cuh"
#include "prefill/sm90/workspace.h"
#include "prefill/sm90/workspace_buffer.h"

namespace gdn::sm90 {
namespace {

template <class In, int BV, int Ver> constexpr auto kernel_of() {
  if constexpr (Ver == kKernelV2) return prefill_sm90_v2_kernel<In, BV>;
  else return prefill_sm90_kernel<In, BV>;
}

template <class In, int BV, int Ver> void launch_typed(const prefill::Args& a, const Plan& p, cudaStream_t stream) {
  const auto kernel = kernel_of<In, BV, Ver>();
  const int smem = p.smem_bytes();
  // Not a stream operation: allowed while a graph is being captured.
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const int64_t ctas = int64_t(p.v_blocks(a.V)) * a.HV * a.N;
  kernel<<<dim3(unsigned(ctas)), unsigned(p.warps() * 32), size_t(smem), stream>>>(a, p.v_blocks(a.V));
  CUDA_CHECK(cudaGetLastError());
}

// Kernel v3: every chunk prepared into the workspace, then the scan (same stream, in order).
template <class In, int BV> void launch_v3(const prefill::Args& a, const Plan& p, cudaStream_t stream) {
  uint8_t* ws = workspace_for(workspace_bytes(a.T, a.N, a.HV), stream);
  const auto prep = prefill_sm90_prep_kernel<In>;
  const int prep_smem = SmemLayout(0, kPrepKernel).bytes;
  CUDA_CHECK(cudaFuncSetAttribute(prep, cudaFuncAttributeMaxDynamicSharedMemorySize, prep_smem));
  prep<<<dim3(unsigned(slot_count(a.T, a.N)), unsigned(a.HV)), kPrepKernelThreads, size_t(prep_smem), stream>>>(a, ws);
  CUDA_CHECK(cudaGetLastError());
  const auto scan = prefill_sm90_v3_kernel<In, BV>;
  const int smem = p.smem_bytes();
  CUDA_CHECK(cudaFuncSetAttribute(scan, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const int64_t ctas = int64_t(p.v_blocks(a.V)) * a.HV * a.N;
  scan<<<dim3(unsigned(ctas)), unsigned(p.warps() * 32), size_t(smem), stream>>>(a, p.v_blocks(a.V), ws);
  CUDA_CHECK(cudaGetLastError());
}

template <class In> void launch_block(const prefill::Args& a, const Plan& p, cudaStream_t stream) {
  if (p.kernel == kKernelV3) {
    switch (p.block_v) {
      case 32: return launch_v3<In, 32>(a, p, stream);
      case 64: return launch_v3<In, 64>(a, p, stream);
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

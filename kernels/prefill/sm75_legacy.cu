// prefill/sm75_legacy: the token recurrence on CUDA cores with the state slice in registers for
// the whole sequence and warp-shuffle reductions, built for compute_75 (sm_75 SASS plus PTX) so
// one binary runs on every GPU from Turing on. The kernel is in sm75_legacy/recurrent.cuh;
// design notes and measurements in sm75_legacy/README.md.
#include <fmt/format.h>

#include "prefill/sm75_legacy/config.h"
#include "prefill/sm75_legacy/recurrent.cuh"
#include "core/registry.h"
#include "core/state_format.h"
#include "prefill/op.h"

namespace gdn {
namespace {

std::string supports(const Shape& s) {
  if (auto why = unsupported_8bit_state(s); !why.empty()) return why;
  if (s.input_dtype != DType::bf16 && s.input_dtype != DType::f16)
    return fmt::format("inputs must be bf16 or f16 (got {})", to_string(s.input_dtype));
  if (s.has_checkpoints()) return "prefill checkpoints (docs/method.md 2.4) are not implemented by this variant";
  return legacy::unsupported_reason(s.dk, s.dv, int64_t(s.seqlens.size()), s.h_v);
}

// Shared memory per SM of the current device: picks the staging tile (see config.h).
int smem_per_sm() {
  int dev = 0, bytes = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  return bytes;
}

void launch(const Shape& s, const TensorSet& t, const LaunchContext& ctx) {
  const prefill::Args a = prefill::make_args(s, t, nullptr);
  const legacy::Config cfg = legacy::choose_config(a.K, a.V, a.N, a.HV, ctx.sm_count, smem_per_sm());
  legacy::launch_prefill(a, cfg, static_cast<cudaStream_t>(ctx.stream));
}

// The state stays fp32 end to end (measured rel L2 <= 1e-6 against the fp64 reference), so
// ht is held to the fp32-path bound; o keeps the bf16-output default (rounding alone ~2e-3).
const VariantRegistration kRegistration{Variant{
    "prefill/sm75_legacy", OpKind::prefill, Backend::cuda, 75, 1000,
    "recurrent forward on CUDA cores (Turing and later): state slice in registers, 8-lane shuffle "
    "reductions, V split across warps, tokens staged 32 at a time",
    supports, launch, {{"ht", 1e-4}}, false}};

}  // namespace
}  // namespace gdn

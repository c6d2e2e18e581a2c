// prefill/sm80: the chunked forward (docs/method.md 6 and Appendix A) on mma.sync tensor cores, for
// every GPU from Ampere on that has no wgmma (and, forced, on Hopper through its compute_80 PTX): the
// registration of the kernels/prefill/sm80/ family. Design: kernels/prefill/sm80/README.md.
#include <cuda_runtime.h>

#include <stdexcept>

#include "core/device_attribute.h"
#include "core/registry.h"
#include "prefill/op.h"
#include "prefill/sm80/launch.h"
#include "prefill/sm80/plan.h"

namespace gdn {
namespace {

int sm_count_or_default(int sms) { return sms > 0 ? sms : sm80::kDefaultSmCount; }

int smem_optin() { return current_device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin); }

sm80::Plan plan_of(const Shape& s, int sms) { return sm80::plan_for(sm80::Batch::of(s), sms, smem_optin(), s.plan); }

std::string supports(const Shape& s) {
  if (auto why = sm80::unsupported_reason(s); !why.empty()) return why;
  try {
    return sm80::unrunnable_reason(plan_of(s, sm_count_or_default(current_device_attribute(cudaDevAttrMultiProcessorCount))),
                                   smem_optin());
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

void launch(const Shape& s, const TensorSet& t, const LaunchContext& ctx) {
  sm80::launch(prefill::make_args(s, t, nullptr), plan_of(s, sm_count_or_default(ctx.sm_count)), ctx.stream);
}

std::string plan(const Shape& s) {
  const int sms = sm_count_or_default(current_device_attribute(cudaDevAttrMultiProcessorCount));
  return plan_of(s, sms).describe(sm80::Batch::of(s), sms);
}

Variant make_variant() {
  Variant v;
  v.name = "prefill/sm80";
  v.op = OpKind::prefill;
  v.backend = Backend::cuda;
  v.min_arch = 80;
  v.description =
      "chunked forward on mma.sync tensor cores for GPUs without wgmma (sm_80 SASS, compute_80 PTX for newer ones): "
      "prefill/sm90's two-pass schedule without its Hopper instructions. 64-token chunks prepared in a kernel of their "
      "own (A_g, P_g into a workspace), then the scan at 32 or 64 value columns per CTA with two stages (three where the GPU allows), fp32 state in "
      "registers; long sequences of few heads split into segments (transition pass, fixup); dense h0/ht or an "
      "f32/bf16 state pool by index; K = V = 128, bf16/f16 inputs; no checkpoints or 8-bit pools yet";
  v.supports = supports;
  v.launch = launch;
  v.plan = plan;
  v.knobs = sm80::plan_knobs();
  v.check_plan = [](const std::string& spec) { return sm80::check_spec(spec); };
  return v;
}

const VariantRegistration kRegistration{make_variant()};

}  // namespace
}  // namespace gdn

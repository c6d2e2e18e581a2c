// prefill/sm90: the chunked forward (docs/method.md 6 and Appendix A) on tensor cores for Hopper, the
// registration of the kernels/prefill/sm90/ family (kernels, host plan, its knobs). One scan CTA per
// (value-column block, value head, sequence or segment); the fp32 state stays in registers across
// the 64-token chunks. Design: kernels/prefill/sm90/README.md.
#include <cuda_runtime.h>

#include <stdexcept>

#include "core/device_attribute.h"
#include "core/registry.h"
#include "prefill/op.h"
#include "prefill/sm90/launch.h"
#include "prefill/sm90/plan.h"

namespace gdn {
namespace {

// Multiprocessors of the current device, or 0 when there is none (planning on a CPU host).
int device_sm_count() { return current_device_attribute(cudaDevAttrMultiProcessorCount); }

int sm_count_or_default(int sms) { return sms > 0 ? sms : sm90::kDefaultSmCount; }

// The plan of shape s (its plan spec over the default) on sms multiprocessors.
sm90::Plan plan_of(const Shape& s, int sms) { return sm90::plan_for(sm90::Batch::of(s), sms, s.plan); }

std::string supports(const Shape& s) {
  if (auto why = sm90::unsupported_reason(s); !why.empty()) return why;
  try {
    return sm90::unrunnable_reason(sm90::Batch::of(s), plan_of(s, sm_count_or_default(device_sm_count())));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

void launch(const Shape& s, const TensorSet& t, const LaunchContext& ctx) {
  sm90::launch(prefill::make_args(s, t, nullptr), plan_of(s, sm_count_or_default(ctx.sm_count)), ctx.stream,
               t.ptr<float>("pool_scale"));  // 8-bit pools only (not part of prefill::Args)
}

std::string plan(const Shape& s) {
  const int sms = sm_count_or_default(device_sm_count());
  return plan_of(s, sms).describe(sm90::Batch::of(s), sms);
}

Variant make_variant() {
  Variant v;
  v.name = "prefill/sm90";
  v.op = OpKind::prefill;
  v.backend = Backend::cuda;
  v.min_arch = v.max_arch = 90;
  v.description =
      "chunked forward on tensor cores for sm_90a (mma.sync and wgmma): 64-token chunks, the gated intra-chunk inverse "
      "(8 x 8 fp32 eliminations, f16 merges), fp32 state in the registers of the warps owning its value columns; two "
      "schedules: two_pass prepares every chunk in a kernel of its own (A_g, P_g into a workspace), then scans the state "
      "through the chunks, splitting few heads over long sequences into segments scanned in parallel (context "
      "parallelism: each segment's exact start state from a K x K transition map, with a decay-driven warm-up); fused "
      "prepares each chunk one ahead inside the scan's CTA; dense h0/ht or a state pool by index (f32, bf16; fp8e4m3 and int8 with a "
      "scale per row on two_pass), with checkpoints on every schedule; K = V = 128, bf16/f16 inputs";
  v.supports = supports;
  v.launch = launch;
  v.plan = plan;
  v.knobs = sm90::plan_knobs();
  v.check_plan = [](const std::string& spec) { return sm90::check_spec(spec); };
  return v;
}

const VariantRegistration kRegistration{make_variant()};

}  // namespace
}  // namespace gdn

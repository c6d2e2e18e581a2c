// prefill/sm90: the chunked forward (gdn-math.md 3.1-3.3) on tensor cores for Hopper, a
// registration of the kernels/prefill/sm90/ family (kernels v1, v2 and v3, host plan, notes). One
// scan CTA per (value-column block, value head, sequence or segment); the fp32 state stays in
// registers across the 64-token chunks. Design, estimates and what is left: docs/notes/prefill-sm90.md.
#include <cuda_runtime.h>

#include "core/registry.h"
#include "prefill/op.h"
#include "prefill/sm90/launch.h"
#include "prefill/sm90/plan.h"

namespace gdn {
namespace {

// Multiprocessors of the current device, or 0 when there is none (planning on a CPU host).
int device_sm_count() {
  int dev = 0, count = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it so later calls do not see it
    return 0;
  }
  return count;
}

int sm_count_or_default(int sms) { return sms > 0 ? sms : sm90::kDefaultSmCount; }

void launch(const Shape& s, const TensorSet& t, const LaunchContext& ctx) {
  const int sms = sm_count_or_default(ctx.sm_count);
  sm90::launch(prefill::make_args(s, t, nullptr), sm90::plan_for(sm90::Batch::of(s), sms), ctx.stream);
}

std::string plan(const Shape& s) {
  const int sms = sm_count_or_default(device_sm_count());
  const sm90::Batch b = sm90::Batch::of(s);
  return sm90::plan_for(b, sms).describe(b, sms);
}

const VariantRegistration kRegistration{Variant{
    "prefill/sm90", OpKind::prefill, Backend::cuda, 90, 90,
    "chunked forward on tensor cores for sm_90a (mma.sync and wgmma): 64-token chunks, the gated intra-chunk inverse "
    "(fp32 diagonal solves, TF32 merges), fp32 state in the registers of the warps owning its value columns; kernel v3 "
    "(default) prepares every chunk in a "
    "kernel of its own (A_g, P_g into a workspace), then scans the state through the chunks, q/k/v and the "
    "prepared chunk staged by cp.async; few heads over long sequences are split into segments scanned in parallel "
    "(context parallelism: each segment's exact start state from a K x K transition map, with a decay-driven "
    "warm-up); dense h0/ht or a state pool by index; v1 and v2 (the preparation inside the scan) kept for A/B; "
    "K = V = 128, bf16/f16 inputs",
    sm90::unsupported_reason, launch, {}, false, plan}};

}  // namespace
}  // namespace gdn

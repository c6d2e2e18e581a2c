// mtp/fast: the bandwidth-bound speculative-verify step (T tokens per row), a registration of the
// step kernel family (kernels/step/). The state tile stays in registers across all T tokens:
// read once, written once (if update_state), streamed to the intermediate cache after each token
// when asked; longer vk calls without the cache run in chunks of 8 tokens on tensor cores, and
// read-only calls start from the starting state's dots (kernels/step/plan.h says which when).
#include "core/registry.h"
#include "step/step.h"

namespace gdn {
namespace {

const VariantRegistration kRegistration{Variant{
    "mtp/fast", OpKind::mtp, Backend::cuda, 80, 1000,
    "bandwidth-bound: state tile in registers across all T tokens, lazy decay, optional per-token cache; "
    "T >= 8 (most T >= 6 with fp32 pools) without the cache (vk) in chunks of 8 on tensor cores (mma.sync bf16, the state split in two halves for fp32 accuracy; TF32 for large pipelined batches); "
    "read-only calls (vk, no cache) from the starting state's dots and the tokens' Gram table; "
    "K = 128, V % 16 == 0, bf16 inputs, T <= 64, vk and kv, fp32 and bf16 pools",
    step::supports, step::launch_variant, step::tolerances(), false, step::plan_of, step::knobs(),
    step::check_spec}};

}  // namespace
}  // namespace gdn

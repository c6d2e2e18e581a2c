// mtp/fast: the bandwidth-bound speculative-verify step (T tokens per row). The state tile stays
// in registers across all T tokens: read once, written once (if update_state), streamed to the
// intermediate cache after each token when asked. From 8 tokens on (vk, no cache; from 6 with an
// fp32 pool, see uses_mma) the chunked tensor-core kernel (step_mtp_mma.cuh) takes the call, on
// bf16 MMAs with the state split into two bf16 halves (TF32 in the pipelined kernel's large batches).
// Read-only calls (update_state off, no cache) need no state after any token: up to 4 tokens
// step_vk_read_only_kernel (dots with the starting state, the tokens' Gram table), from 5 on the
// tensor-core kernels without their state update (step_read_only.cuh, read_only_mma).
// docs/notes/decode-mtp.md.
#include "common/step_launch.cuh"

namespace gdn {
namespace {

const VariantRegistration kRegistration{Variant{
    "mtp/fast", OpKind::mtp, Backend::cuda, 80, 1000,
    "bandwidth-bound: state tile in registers across all T tokens, lazy decay, optional per-token cache; "
    "T >= 8 (most T >= 6 with fp32 pools) without the cache (vk) in chunks of 8 on tensor cores (mma.sync bf16, the state split in two halves for fp32 accuracy; TF32 for large pipelined batches); "
    "read-only calls (vk, no cache) from the starting state's dots and the tokens' Gram table; "
    "K = 128, V % 16 == 0, bf16 inputs, T <= 64, vk and kv, fp32 and bf16 pools",
    fast::step_support, fast::step_fast_launch, fast::step_fast_tolerances(), false}};

}  // namespace
}  // namespace gdn

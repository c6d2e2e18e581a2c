// decode/fast: the bandwidth-bound production decode step (one token per row, state pool updated
// in place). One warp per state tile kept in registers, every load in flight before first use;
// design and measurements in docs/notes/decode-mtp.md. Shares its kernels with mtp/fast.
#include "common/step_launch.cuh"

namespace gdn {
namespace {

const VariantRegistration kRegistration{Variant{
    "decode/fast", OpKind::decode, Backend::cuda, 80, 1000,
    "bandwidth-bound: one warp per state tile in registers, 16-byte loads all in flight, q/k/v staged by "
    "cp.async; K = 128, V % 16 == 0, bf16 inputs, vk and kv, fp32 and bf16 pools",
    fast::step_support, fast::step_fast_launch, fast::step_fast_tolerances(), false}};

}  // namespace
}  // namespace gdn

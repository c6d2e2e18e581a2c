// decode/fast: the bandwidth-bound production decode step (one token per row, state pool updated
// in place), a registration of the step kernel family (kernels/step/: kernels, routing plan and
// notes). One warp per state tile kept in registers as loaded (packed bf16 stays packed), every
// load in flight before first use, loads marked L2-persisting so the in-place write-back finds
// the line.
#include "core/registry.h"
#include "step/step.h"

namespace gdn {
namespace {

const VariantRegistration kRegistration{Variant{
    "decode/fast", OpKind::decode, Backend::cuda, 80, 1000,
    "bandwidth-bound: one warp per state tile in registers (bf16 kept packed), 16-byte loads all in flight "
    "with an L2 keep-for-write-back hint, q/k/v staged by cp.async; K = 128, V % 16 == 0, bf16 inputs, vk and "
    "kv, fp32 and bf16 pools",
    step::supports, step::launch_variant, step::tolerances(), false, step::plan_of, step::knobs(),
    step::check_spec}};

}  // namespace
}  // namespace gdn

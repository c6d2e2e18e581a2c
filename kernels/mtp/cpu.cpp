// mtp/cpu: T draft tokens per row on the host in fp32, threads over (row, value head), with the
// optional per-token state cache and read-only pool (update_state off). See kernels/cpu/pool_step.h.
#include "cpu/pool_step.h"
#include "core/registry.h"
#include "mtp/op.h"

namespace gdn {
namespace {

void launch(const Shape& s, const TensorSet& t, const LaunchContext& ctx) {
  cpu::pool_step(decode::make_args(s, t), s.input_dtype, ctx.num_threads);
}

VariantRegistration reg{Variant{
    .name = "mtp/cpu",
    .op = OpKind::mtp,
    .backend = Backend::cpu,
    .description = "host fp32 multi-token step, threads over (row, value head); intermediate cache, any layout",
    .supports = {},  // every shape the op accepts (OpDef::validate) is supported
    .launch = launch,
    .tolerances = {},  // pool keeps the op default: a bf16 pool needs it
}};

}  // namespace
}  // namespace gdn

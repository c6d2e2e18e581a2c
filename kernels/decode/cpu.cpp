// decode/cpu: one token per row on the host in fp32, threads over (row, value head); the pool
// slot is updated in place (fp32) or through an fp32 buffer (bf16). See kernels/cpu/pool_step.h.
#include "cpu/pool_step.h"
#include "core/registry.h"
#include "decode/op.h"

namespace gdn {
namespace {

void launch(const Shape& s, const TensorSet& t, const LaunchContext& ctx) {
  cpu::pool_step(decode::make_args(s, t), s.input_dtype, ctx.num_threads);
}

VariantRegistration reg{Variant{
    .name = "decode/cpu",
    .op = OpKind::decode,
    .backend = Backend::cpu,
    .description = "host fp32 state step, threads over (row, value head); any K, V, layout, f32/bf16 pool",
    .supports = {},  // every shape the op accepts (OpDef::validate) is supported
    .launch = launch,
    .tolerances = {},  // pool keeps the op default: a bf16 pool needs it
}};

}  // namespace
}  // namespace gdn

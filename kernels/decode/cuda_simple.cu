// decode/cuda_simple: the plain one-token state update on CUDA cores, the baseline every decode
// variant must beat. One block per (row, value head, 32 value columns); the kernel is shared
// with mtp/cuda_simple (decode is the T = 1 case).
#include "simple/step.cuh"

namespace gdn {
namespace {

const VariantRegistration kRegistration{Variant{
    "decode/cuda_simple", OpKind::decode, Backend::cuda, 75, 1000,
    "one block per (row, head, 32 value columns), state slice in shared memory; simple baseline",
    simple::step_simple_supports, simple::step_simple_launch, {}, false}};

}  // namespace
}  // namespace gdn

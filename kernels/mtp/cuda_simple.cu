// mtp/cuda_simple: the plain T-token verify step on CUDA cores, the baseline every mtp variant
// must beat. One block per (row, value head, 32 value columns) keeps its state slice in shared
// memory across the row's T tokens, caching it after each token when asked.
#include "simple/step.cuh"

namespace gdn {
namespace {

const VariantRegistration kRegistration{Variant{
    "mtp/cuda_simple", OpKind::mtp, Backend::cuda, 75, 1000,
    "one block per (row, head, 32 value columns), token loop over T, state slice in shared memory; simple baseline",
    simple::step_simple_supports, simple::step_simple_launch, {}, false}};

}  // namespace
}  // namespace gdn

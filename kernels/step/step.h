// The fast decode/mtp kernel family behind decode/fast and mtp/fast, as host code sees it:
// which shapes it takes, its launch (one translation unit, launch.cu, holds every kernel), its
// tolerances and the printable plan of a call. Host-only: no CUDA types.
#pragma once

#include <string>
#include <vector>

#include "core/op.h"
#include "core/registry.h"
#include "decode/op.h"
#include "step/plan.h"

namespace gdn::step {

// "" when the family handles the shape, its plan (Shape::plan) included, else why not.
std::string supports(const Shape& s);
// Enqueues the call of shape s on tensors t with plan p on `stream` (a cudaStream_t). Throws
// gdn::runtime_error when the plan cannot run the call (check()) or the launch fails.
void launch(const Shape& s, const TensorSet& t, const Plan& p, void* stream);
// The registry's entry points of decode/fast and mtp/fast: the plan_for() of the shape's call
// and plan spec.
void launch_variant(const Shape& s, const TensorSet& t, const LaunchContext& ctx);
std::string plan_of(const Shape& s);
std::vector<Tolerance> tolerances();

}  // namespace gdn::step

// What host code sees of the prefill/sm80 kernels: one launch per call, per plan. Host-only.
#pragma once

#include "prefill/op.h"
#include "prefill/sm80/plan.h"

namespace gdn::sm80 {

// Enqueues the call on `stream` (a cudaStream_t) with plan p: the preparation kernel, then the
// scan, in order on the stream, and a workspace that grows outside a capture (prefill/sm90's
// workspace_buffer.h); no host synchronisation, so a CUDA graph can capture it. Throws
// gdn::runtime_error when the launch fails or the call is outside what supports() accepts.
void launch(const prefill::Args& a, const Plan& p, void* stream);

}  // namespace gdn::sm80

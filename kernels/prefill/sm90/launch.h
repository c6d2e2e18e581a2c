// What host code sees of the prefill/sm90 kernels: one launch per call, per plan. Host-only.
#pragma once

#include "prefill/op.h"
#include "prefill/sm90/plan.h"

namespace gdn::sm90 {

// Enqueues the call on `stream` (a cudaStream_t) with plan p: the fused kernel, or the two-pass
// schedule's kernels and a workspace that grows outside a capture (workspace_buffer.h); no host
// synchronisation and no device-to-host read, so a CUDA graph can capture it. Throws
// gdn::runtime_error when the launch fails or the call is outside what supports() accepts.
// pool_scale: an 8-bit pool's row scales (tensor pool_scale; null for f32 and bf16 pools).
void launch(const prefill::Args& a, const Plan& p, void* stream, float* pool_scale = nullptr);

}  // namespace gdn::sm90

// The device workspace of the two-pass schedule (workspace.h), one buffer per device, grown on
// demand and kept for the process. Host-only.
#pragma once

#include <cstdint>

#include "prefill/sm90/segments.h"

namespace gdn::sm90 {

// At least `bytes` of device memory on the current device for work enqueued on `stream`. Growing
// waits for the stream (the old buffer may be in use) and so is refused while the stream is being
// captured into a graph: a call that needs more than the buffer holds must run once uncaptured
// first (gdn::runtime_error says so).
uint8_t* workspace_for(int64_t bytes, void* stream);

// The two-pass schedule's workspace for a batch of T tokens in N sequences and HV value heads:
// the prepared slots (workspace.h), then, with a split of seg_chunks chunks, its M, N and start
// buffers and its warm-up flags, which go into *cp with seg_chunks. Returns the slots' base.
uint8_t* two_pass_workspace(int64_t T, int64_t N, int HV, int seg_chunks, void* stream, CpArgs* cp);

}  // namespace gdn::sm90

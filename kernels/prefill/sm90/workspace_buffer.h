// The device workspace of the two-pass schedule (workspace.h), one buffer per device, grown on
// demand and kept for the process. Host-only.
#pragma once

#include <cstdint>

namespace gdn::sm90 {

// At least `bytes` of device memory on the current device for work enqueued on `stream`. Growing
// waits for the stream (the old buffer may be in use) and so is refused while the stream is being
// captured into a graph: a call that needs more than the buffer holds must run once uncaptured
// first (gdn::runtime_error says so).
uint8_t* workspace_for(int64_t bytes, void* stream);

}  // namespace gdn::sm90

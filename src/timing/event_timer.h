// The "events" timer: CUDA events recorded around each sample's launch on the timing stream.
// The fallback when CUPTI is unavailable; includes launch gaps, about 0.5 us resolution.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "timing/sm_clock.h"
#include "timing/timer.h"

namespace gdn {

// Per sample: before(), clock stamp, synchronise, record start, launch(), record stop,
// synchronise, elapsed. `clock` (optional) fills Sample::sm_clock_mhz.
std::unique_ptr<Timer> make_event_timer(cudaStream_t stream, std::shared_ptr<SmClockProbe> clock = nullptr);

}  // namespace gdn

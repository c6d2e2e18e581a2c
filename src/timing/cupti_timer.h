// The "cupti" timer: kernel durations from CUPTI activity records (CONCURRENT_KERNEL), the
// default GPU timer (docs/method.md 7). Tracing starts once per process and stays on, warm-ups
// included, so every launch pays the same instrumentation cost.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "timing/sm_clock.h"
#include "timing/timer.h"

namespace gdn {

// Starts process-wide kernel tracing the first time (later calls return the first answer).
// False with `why` when libcupti cannot be loaded, CUPTI refuses (another profiler holds it:
// CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) or GDNBENCH_DISABLE_CUPTI is set.
bool start_cupti_tracing(std::string* why = nullptr);

// The CUPTI timer on `stream`, or null with `why` set when tracing is unavailable. Per sample:
// before() (the cache flush), clock stamp, synchronise, t0, launch(), synchronise, t1; after the
// batch the records are flushed and each kernel is attributed to the window holding its start,
// so work enqueued by before() never lands in a sample.
std::unique_ptr<Timer> make_cupti_timer(cudaStream_t stream, std::shared_ptr<SmClockProbe> clock, std::string* why);

// Why the most recent make_cupti_timer call returned null ("" when it succeeded or was never
// called): what a report names when the timer is "events".
std::string cupti_unavailable_reason();

}  // namespace gdn

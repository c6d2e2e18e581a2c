// The timer interface shared by the CPU (host clock) and GPU (CUPTI, CUDA events) paths.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gdn {

// One kernel of one sample (CUPTI only): its own GPU duration.
struct KernelTime {
  std::string name;
  double seconds = 0;
};

struct Sample {
  double seconds = 0;               // the measured span
  std::vector<KernelTime> kernels;  // per-kernel durations where the timer sees them
  double sm_clock_mhz = 0;          // effective SM clock during the sample, 0 if unknown
};

// What the measurement loop hands a timer for each sample.
struct SampleHooks {
  std::function<void()> before;  // runs outside the measured span, completed before it starts (cache flush)
  std::function<void()> launch;  // the variant, once
};

class Timer {
 public:
  virtual ~Timer() = default;
  virtual std::string name() const = 0;  // "host", "cupti", "events"
  // Takes n samples, each: before(), wait for it, start, launch(), wait, stop.
  virtual std::vector<Sample> measure(const SampleHooks& hooks, int n) = 0;
};

// Steady host clock; for CPU variants (their launch is synchronous).
std::unique_ptr<Timer> make_host_timer();

}  // namespace gdn

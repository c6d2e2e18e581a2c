// Effective SM clock per sample, the nvbench way: a tiny kernel stamps SM 0's cycle counter and
// the GPU's nanosecond timer just before and just after a sample; cycles over nanoseconds is
// the clock the sample ran at. Needs no NVML and no privileges. The stamps run outside the
// measured span (before the pre-sample synchronise, after the post-sample one).
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <vector>

namespace gdn {

class SmClockProbe {
 public:
  // A sample below this fraction of the device's max SM clock counts as throttled.
  static constexpr double kThrottleFraction = 0.75;

  SmClockProbe(int device, cudaStream_t stream);
  ~SmClockProbe();
  SmClockProbe(const SmClockProbe&) = delete;
  SmClockProbe& operator=(const SmClockProbe&) = delete;

  // Prepares (and clears) stamp slots for n samples; call before the batch.
  void begin_batch(int n);
  // Enqueue a stamp on the stream.
  void stamp_before(int sample);
  void stamp_after(int sample);
  // After the stream has drained: MHz of each of the first n samples (0 where unknown).
  // Notes throttling for throttled_since_last_check().
  std::vector<double> read_mhz(int n);

  int max_clock_mhz() const { return max_clock_mhz_; }
  // True if a sample read since the previous call ran below kThrottleFraction of the max clock.
  bool throttled_since_last_check() { return throttled_.exchange(false); }

 private:
  void stamp(int slot);

  cudaStream_t stream_;
  int sm_count_ = 0;
  int max_clock_mhz_ = 0;
  uint64_t* stamps_ = nullptr;  // device: per slot {globaltimer ns, clock64}
  int capacity_ = 0;            // samples
  std::atomic<bool> throttled_{false};
};

}  // namespace gdn

// The host's memory bandwidth measured the way the CPU variants move memory (docs/method.md 5.3):
// right after a cold flush, every worker reads and rewrites in place its share of a working set
// the size of the case's traffic; bytes read + written per second, the best of a few runs.
// Past 4x the host's caches (at least 256 MiB) every size streams from memory alike, so larger
// cases are measured at that size instead of doubling their memory for the measurement.
//
// Measuring at the case's size matters: a working set that fits in the host's caches is read from
// memory after the flush, but its writes stay in cache past the timed span, so it can move up to
// twice the bytes per second of one that does not fit (docs/method.md 5.3).
#pragma once

#include <cstdint>
#include <map>

#include "timing/host_flush.h"
#include "timing/host_workers.h"

namespace gdn {

class HostPeak {
 public:
  static constexpr int kRuns = 5;

  // cache_bytes: HostInfo::cache_bytes (0 unknown).
  HostPeak(HostWorkers& workers, HostCacheFlush& flush, uint64_t cache_bytes);

  // Bytes read + written per second for a case that moves `bytes`. Measured once per working set.
  double bytes_per_second(double bytes);
  // The working set the peak for `bytes` is measured on: half of it, rounded up to 4 KiB, at most
  // streaming_size().
  uint64_t working_set(double bytes) const;
  // The size from which every working set streams from memory: 4x the caches, at least 256 MiB.
  uint64_t streaming_size() const { return streaming_; }

 private:
  HostWorkers& workers_;
  HostCacheFlush& flush_;
  uint64_t streaming_;
  std::map<uint64_t, double> measured_;
};

}  // namespace gdn

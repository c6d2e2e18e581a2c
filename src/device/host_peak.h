// The host's memory bandwidth measured the way the CPU variants move memory (SPEC section 5):
// right after a cold flush, every worker reads and rewrites in place its share of a working set
// the size of the case's traffic; bytes read + written per second, the best of a few runs.
//
// Measuring at the case's size matters: a working set that fits in the host's caches is read from
// memory after the flush, but its writes stay in cache past the timed span, so it can move up to
// twice the bytes per second of one that does not fit (docs/notes/host-timing.md).
#pragma once

#include <cstdint>
#include <map>

#include "timing/host_flush.h"
#include "timing/host_workers.h"

namespace gdn {

class HostPeak {
 public:
  static constexpr int kRuns = 5;

  HostPeak(HostWorkers& workers, HostCacheFlush& flush) : workers_(workers), flush_(flush) {}

  // Bytes read + written per second for a case that moves `bytes` (its working set is half of
  // that, rounded up to 4 KiB). Measured once per working-set size.
  double bytes_per_second(double bytes);
  static uint64_t working_set(double bytes);

 private:
  HostWorkers& workers_;
  HostCacheFlush& flush_;
  std::map<uint64_t, double> measured_;
};

}  // namespace gdn

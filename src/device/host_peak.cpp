#include "device/host_peak.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <new>

namespace gdn {
namespace {

constexpr uint64_t kPage = 4096;

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};

// Worker w's share [lo, hi) of n floats.
std::pair<std::size_t, std::size_t> share(std::size_t n, int w, int workers) {
  return {n * std::size_t(w) / std::size_t(workers), n * std::size_t(w + 1) / std::size_t(workers)};
}

}  // namespace

HostPeak::HostPeak(HostWorkers& workers, HostCacheFlush& flush, uint64_t cache_bytes)
    : workers_(workers), flush_(flush), streaming_(std::max<uint64_t>(4 * cache_bytes, uint64_t(256) << 20)) {
  streaming_ = (streaming_ + kPage - 1) / kPage * kPage;
}

uint64_t HostPeak::working_set(double bytes) const {
  const double half = std::clamp(std::ceil(bytes / 2), 1.0, double(streaming_));
  return std::min((uint64_t(half) + kPage - 1) / kPage * kPage, streaming_);
}

double HostPeak::bytes_per_second(double bytes) {
  const uint64_t size = working_set(bytes);
  if (auto it = measured_.find(size); it != measured_.end()) return it->second;

  std::unique_ptr<float, FreeDeleter> buffer(static_cast<float*>(std::aligned_alloc(kPage, size)));
  if (!buffer) throw std::bad_alloc();
  float* data = buffer.get();
  const std::size_t n = size / sizeof(float);
  const int workers = workers_.size();
  // Each worker touches its own share first, as the variants' inputs are spread over the cores.
  workers_.run([&](int w) {
    auto [lo, hi] = share(n, w, workers);
    std::fill(data + lo, data + hi, 1.0f);
  });
  // Read at run time, so the compiler cannot prove the rewrite a no-op and drop the stores.
  static volatile float scale = 1.0f, shift = 0.0f;
  const float a = scale, b = shift;
  double best = 0;
  for (int run = 0; run < kRuns; ++run) {
    flush_.flush({HostRange{data, size}});
    const double seconds = workers_.run([&](int w) {
      auto [lo, hi] = share(n, w, workers);
      for (std::size_t i = lo; i < hi; ++i) data[i] = data[i] * a + b;
    });
    if (seconds > 0) best = std::max(best, 2.0 * double(size) / seconds);
  }
  measured_[size] = best;
  return best;
}

}  // namespace gdn

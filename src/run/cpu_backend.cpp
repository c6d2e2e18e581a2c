// The host backend: CPU variants run synchronously on host memory, timed by the steady clock.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "core/errors.h"
#include "device/info.h"
#include "run/backend.h"
#include "timing/host_flush.h"

namespace gdn {
namespace {

// Host copy bandwidth (bytes read + written per second) with every core copying its share of
// two 256 MiB buffers; the best of a few repetitions. Measured once per process.
double measure_host_bandwidth(int threads) {
  const std::size_t bytes = std::size_t(256) << 20;
  std::vector<char> a(bytes, 1), b(bytes, 2);
  double best = 0;
  for (int rep = 0; rep < 4; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        std::size_t lo = bytes * t / threads, hi = bytes * (t + 1) / threads;
        std::memcpy(b.data() + lo, a.data() + lo, hi - lo);
      });
    for (auto& th : pool) th.join();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * double(bytes) / s);
  }
  return best;
}

class CpuBackend final : public ExecBackend {
 public:
  explicit CpuBackend(int threads) : threads_(threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency()))) {
    host_ = query_host();
  }
  Backend kind() const override { return Backend::cpu; }
  std::string device_name() const override { return "host: " + host_.cpu_model; }
  std::string can_run(const Variant& v) const override {
    return v.backend == Backend::cpu ? "" : "not a CPU variant";
  }
  void* alloc(std::size_t bytes) override {
    void* p = std::aligned_alloc(64, ((bytes + 63) / 64) * 64 + 64);
    if (!p) throw runtime_error("host allocation failed");
    return p;
  }
  void free(void* p) override { std::free(p); }
  std::size_t free_memory() const override {
    std::ifstream f("/proc/meminfo");
    std::string key;
    std::size_t kb = 0;
    while (f >> key >> kb) {
      if (key == "MemAvailable:") return kb * 1024;
      f.ignore(256, '\n');
    }
    return std::size_t(1) << 40;
  }
  void to_device(void* dst, const void* src, std::size_t n) override { std::memcpy(dst, src, n); }
  void to_host(void* dst, const void* src, std::size_t n) override { std::memcpy(dst, src, n); }
  void synchronize() override {}
  LaunchContext launch_context() const override {
    LaunchContext c;
    c.num_threads = threads_;
    return c;
  }
  std::unique_ptr<Timer> make_timer(TimingMode) override { return make_host_timer(); }
  std::function<void()> before_sample(TimingMode mode) override {
    if (mode != TimingMode::cold) return [] {};
    return make_host_cache_flush(host_.llc_bytes);
  }
  // Every CPU variant is reported against the host's memory bandwidth (there is no tensor-core
  // rate to hold prefill against on the host).
  Peak peak(bool) override {
    Peak p;
    if (bandwidth_ == 0) bandwidth_ = measure_host_bandwidth(threads_);
    p.kind = "host_bandwidth";
    p.value = bandwidth_;
    p.source = "measured now (threaded memcpy, read + write)";
    return p;
  }

 private:
  int threads_;
  HostInfo host_;
  double bandwidth_ = 0;
};

}  // namespace

std::unique_ptr<ExecBackend> make_cpu_backend(int threads) { return std::make_unique<CpuBackend>(threads); }

}  // namespace gdn

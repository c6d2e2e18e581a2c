// The host backend: CPU variants run synchronously on host memory, timed by the steady clock.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <thread>
#include <vector>

#include "core/errors.h"
#include "device/host_peak.h"
#include "device/info.h"
#include "run/backend.h"
#include "timing/host_flush.h"
#include "timing/host_workers.h"

namespace gdn {
namespace {

constexpr double kMiB = 1 << 20;

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
  // Every live buffer is remembered: they are what a cold flush evicts.
  void* alloc(std::size_t bytes) override {
    void* p = std::aligned_alloc(64, ((bytes + 63) / 64) * 64 + 64);
    if (!p) throw runtime_error("host allocation failed");
    live_[p] = bytes;
    return p;
  }
  void free(void* p) override {
    live_.erase(p);
    std::free(p);
  }
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
    return [this] {
      std::vector<HostRange> ranges;
      ranges.reserve(live_.size());
      for (const auto& [p, bytes] : live_) ranges.push_back({p, bytes});
      flush().flush(ranges);
    };
  }
  // Without a case: the streaming peak (a working set no cache holds).
  Peak peak(bool) override {
    WorkModel streaming;
    streaming.bytes = 2.0 * double(host_peak().streaming_size());
    return peak_for(streaming);
  }
  // Every CPU variant is reported against the host's memory bandwidth (there is no tensor-core
  // rate to hold prefill against on the host), measured at the case's size.
  Peak peak_for(const WorkModel& work) override {
    const double ws = double(host_peak().working_set(work.bytes));
    Peak p;
    p.kind = "host_bandwidth";
    p.value = host_peak().bytes_per_second(work.bytes);
    p.source = fmt::format("measured now: in-place read + write of {:.1f} MiB after a cold flush ({}), {} threads, best of {}",
                           ws / kMiB, flush().method(), workers().size(), HostPeak::kRuns);
    const double caches = double(host_.cache_bytes);
    p.caveat = caches > 0 && ws <= caches
                   ? fmt::format("its working set ({:.1f} MiB) fits in the host's caches ({:.1f} MiB), where how many "
                                 "of its writes stay past the timed span depends on its access order, which the "
                                 "in-place peak does not reproduce",
                                 ws / kMiB, caches / kMiB)
                   : "the byte model counts bytes this variant does not move, or the flush left its data in cache";
    return p;
  }

 private:
  HostWorkers& workers() {
    if (!workers_) workers_ = std::make_unique<HostWorkers>(threads_);
    return *workers_;
  }
  HostCacheFlush& flush() {
    if (!flush_) flush_ = std::make_unique<HostCacheFlush>(workers(), host_.cache_bytes);
    return *flush_;
  }
  HostPeak& host_peak() {
    if (!peak_) peak_ = std::make_unique<HostPeak>(workers(), flush(), host_.cache_bytes);
    return *peak_;
  }

  int threads_;
  HostInfo host_;
  std::map<void*, std::size_t> live_;
  std::unique_ptr<HostWorkers> workers_;
  std::unique_ptr<HostCacheFlush> flush_;
  std::unique_ptr<HostPeak> peak_;
};

}  // namespace

std::unique_ptr<ExecBackend> make_cpu_backend(int threads) { return std::make_unique<CpuBackend>(threads); }

}  // namespace gdn

// The host's cold flush evicts (SPEC section 7): a buffer read after the flush comes from memory,
// not from a cache, whichever core last touched it. Shown by timing a dependent pointer chase
// (each load waits for the previous one, so prefetchers cannot hide where the line came from):
// a chase through cached lines takes a few ns per line, through memory near 100 ns.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "device/info.h"
#include "timing/host_flush.h"
#include "timing/host_workers.h"

namespace gdn {
namespace {

constexpr std::size_t kLine = 64;

// One index per cache line, linking every line into a single random cycle.
class PointerChase {
 public:
  explicit PointerChase(std::size_t bytes) : lines_(bytes / kLine), slots_(lines_ * kLine / sizeof(std::size_t)) {}

  void build() {  // run on the core that should hold the lines
    std::vector<std::size_t> order(lines_);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::shuffle(order.begin() + 1, order.end(), std::mt19937_64(42));
    for (std::size_t i = 0; i < lines_; ++i) slots_[order[i] * kStride] = order[(i + 1) % lines_] * kStride;
  }
  // Seconds to follow the whole cycle once.
  double walk() {
    const auto t0 = std::chrono::steady_clock::now();
    std::size_t at = 0;
    for (std::size_t i = 0; i < lines_; ++i) at = slots_[at];
    sink_ = sink_ + at;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  std::vector<HostRange> range() const { return {HostRange{slots_.data(), slots_.size() * sizeof(std::size_t)}}; }

 private:
  static constexpr std::size_t kStride = kLine / sizeof(std::size_t);
  std::size_t lines_;
  std::vector<std::size_t> slots_;
  volatile std::size_t sink_ = 0;
};

struct ChaseTimes {
  double hot;   // fastest walk right after a warm-up walk
  double cold;  // fastest walk right after a flush
};

// Builds and walks the chase on the last allowed CPU, alternating a hot walk (after a warm-up
// walk) and a cold one (after `flush`, whose workers may sit on other CPUs). Both keep their
// fastest: being preempted, or having the lines evicted by another process meanwhile, only ever
// makes a walk slower, so the minima say where the lines came from even on a busy machine. Rounds
// go on until cold is `ratio` times hot (at least kMinRounds) or for kBudgetS on a busy machine.
ChaseTimes chase_on_last_cpu(std::size_t bytes, HostCacheFlush& flush, double ratio) {
  constexpr int kMinRounds = 5;
  constexpr double kBudgetS = 5.0;
  HostWorkers reader(int(allowed_cpus().size()));  // worker i on CPU i: the last one reads
  const int last = reader.size() - 1;
  PointerChase chase(bytes);
  reader.run([&](int w) {
    if (w == last) chase.build();
  });
  ChaseTimes t{1e9, 1e9};
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  for (int i = 0; i < kMinRounds || (t.cold <= ratio * t.hot && elapsed() < kBudgetS); ++i) {
    reader.run([&](int w) {
      if (w != last) return;
      chase.walk();
      t.hot = std::min(t.hot, chase.walk());
    });
    flush.flush(chase.range());
    reader.run([&](int w) {
      if (w == last) t.cold = std::min(t.cold, chase.walk());
    });
  }
  return t;
}

// Bytes of cpu0's level-2 cache (0 when sysfs does not say).
uint64_t l2_bytes() {
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level(dir + "level"), size(dir + "size");
    int l = 0;
    uint64_t kib = 0;
    if (level >> l && l == 2 && size >> kib) return kib << 10;  // "1024K"
  }
  return 0;
}

// A buffer that fits in a core's private cache, written and read by one core and flushed by a
// worker on another: the flush must reach the first core's caches too. The old flush (2x the LLC
// overwritten from one core) left it there: 4.3 ns per line after it, 3.5 hot, 114 from memory.
TEST(HostCacheFlush, EvictsWhatAnotherCoresPrivateCacheHolds) {
  if (allowed_cpus().size() < 2) GTEST_SKIP() << "needs two CPUs";
  HostWorkers flusher(1);  // on the first allowed CPU
  HostCacheFlush flush(flusher, query_host().cache_bytes);
  const auto t = chase_on_last_cpu(std::size_t(128) << 10, flush, 3);
  EXPECT_GT(t.cold, 3 * t.hot) << "hot " << t.hot * 1e6 << " us, cold " << t.cold * 1e6 << " us";
}

// A buffer four times the private L2 and at most half the last-level cache: read hot it comes
// from the LLC, after the flush from memory. Slower by 1.3x at least: a mesh LLC is far from a
// core's own caches (this development host, a 2-core Xeon VM with 300 MiB of L3, chases 8 MiB at
// 70-85 ns a line hot and 125 ns from memory, 1.4-1.8x; it failed the 2x this test first asked
// two runs in five), and a flush that evicted nothing would read 1.0x.
TEST(HostCacheFlush, EvictsTheLastLevelCache) {
  const uint64_t llc = query_host().llc_bytes, bytes = 4 * std::max<uint64_t>(l2_bytes(), uint64_t(512) << 10);
  if (llc < 2 * bytes) GTEST_SKIP() << "the LLC (" << (llc >> 20) << " MiB) is not larger than the private caches";
  HostWorkers workers;
  HostCacheFlush flush(workers, query_host().cache_bytes);
  const auto t = chase_on_last_cpu(bytes, flush, 1.3);
  EXPECT_GT(t.cold, 1.3 * t.hot) << (bytes >> 20) << " MiB: hot " << t.hot * 1e3 << " ms, cold " << t.cold * 1e3 << " ms";
}

// The overwrite used where no cache-line flush exists evicts too.
TEST(HostCacheFlush, OverwriteFallbackEvicts) {
  HostWorkers workers;
  HostCacheFlush flush(workers, query_host().cache_bytes, /*overwrite=*/true);
  EXPECT_NE(flush.method().find("overwrite"), std::string::npos) << flush.method();
  const auto t = chase_on_last_cpu(std::size_t(128) << 10, flush, 3);
  EXPECT_GT(t.cold, 3 * t.hot) << "hot " << t.hot * 1e6 << " us, cold " << t.cold * 1e6 << " us";
}

TEST(HostCacheFlush, EmptyAndUnalignedRangesAreFine) {
  HostWorkers workers(2);
  HostCacheFlush flush(workers, 0);
  std::vector<char> data(1000, 1);
  flush.flush({});
  flush.flush({HostRange{data.data() + 3, 0}, HostRange{data.data() + 1, 999}});
  EXPECT_EQ(std::accumulate(data.begin(), data.end(), 0), 1000) << "flushing never changes data";
}

TEST(HostWorkers, RunsTheJobOnceOnEveryWorkerAndRethrows) {
  HostWorkers workers(3);
  ASSERT_EQ(workers.size(), 3);
  std::vector<int> hits(3, 0);
  const double span = workers.run([&](int w) { ++hits[std::size_t(w)]; });
  EXPECT_EQ(hits, (std::vector<int>{1, 1, 1}));
  EXPECT_GE(span, 0);
  EXPECT_THROW(workers.run([](int w) {
    if (w == 1) throw std::runtime_error("worker 1");
  }),
               std::runtime_error);
  workers.run([&](int w) { ++hits[std::size_t(w)]; });  // still usable after an error
  EXPECT_EQ(hits, (std::vector<int>{2, 2, 2}));
}

}  // namespace
}  // namespace gdn

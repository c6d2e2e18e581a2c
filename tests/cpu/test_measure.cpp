#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/errors.h"
#include "timing/measure.h"
#include "timing/timer.h"

namespace gdn {
namespace {

StoppingRule rule() {
  StoppingRule r;
  r.warmup_runs = 2;
  r.min_samples = 10;
  r.max_samples = 1000;
  r.min_time_s = 0.05;
  r.max_noise = 0.005;
  r.timeout_s = 15;
  return r;
}

// 1, 2, 3, 1, 2, 3, ... (ms): relative noise far above 0.5 % at any count.
std::vector<double> noisy(std::size_t n) {
  std::vector<double> v;
  for (std::size_t i = 0; i < n; ++i) v.push_back(1e-3 * double(1 + i % 3));
  return v;
}

TEST(ShouldStop, NeedsMinSamples) {
  std::string why;
  EXPECT_FALSE(should_stop(rule(), std::vector<double>(9, 0.01), 1.0, why));
  EXPECT_TRUE(should_stop(rule(), std::vector<double>(10, 0.01), 1.0, why));
  EXPECT_EQ(why, "noise");
}

TEST(ShouldStop, NeedsMinTime) {
  std::string why;
  EXPECT_FALSE(should_stop(rule(), std::vector<double>(499, 1e-4), 1.0, why));  // 0.0499 s
  EXPECT_TRUE(should_stop(rule(), std::vector<double>(501, 1e-4), 1.0, why));   // 0.0501 s
  EXPECT_EQ(why, "noise");
}

TEST(ShouldStop, NeedsLowNoise) {
  std::string why;
  EXPECT_FALSE(should_stop(rule(), noisy(200), 1.0, why));
  auto lenient = rule();
  lenient.max_noise = 0.5;
  EXPECT_TRUE(should_stop(lenient, noisy(200), 1.0, why));
  EXPECT_EQ(why, "noise");
}

// Host samples spread like a shared machine's (interquartile range 7 % of the median): the host
// rule stops on its noise target after 40 samples (noise 1.0 %); the GPU rule's 0.5 % would need
// some 170.
TEST(ShouldStop, HostRuleConvergesOnANoisyHost) {
  std::vector<double> spread;  // 1 ms +- 7 %, evenly spread: IQR = 7 % of the median
  for (int i = 0; i < 40; ++i) spread.push_back(1e-3 * (0.93 + 0.14 * double((i * 17) % 40) / 39.0));
  std::string why;
  auto host = StoppingRule::host();
  host.min_time_s = 0;
  EXPECT_TRUE(should_stop(host, spread, 0.5, why));
  EXPECT_EQ(why, "noise");
  auto gpu = host;
  gpu.max_noise = StoppingRule().max_noise;
  EXPECT_FALSE(should_stop(gpu, spread, 0.5, why));
  EXPECT_LT(host.timeout_s, StoppingRule().timeout_s);
}

TEST(ShouldStop, MaxSamples) {
  std::string why;
  auto r = rule();
  r.max_samples = 50;
  EXPECT_FALSE(should_stop(r, noisy(49), 1.0, why));
  EXPECT_TRUE(should_stop(r, noisy(50), 1.0, why));
  EXPECT_EQ(why, "max_samples");
}

TEST(ShouldStop, TimeoutKeepsThreeSamples) {
  std::string why;
  EXPECT_FALSE(should_stop(rule(), {}, 100.0, why));  // never stop without a sample
  EXPECT_FALSE(should_stop(rule(), noisy(2), 16.0, why));
  EXPECT_FALSE(should_stop(rule(), noisy(3), 14.0, why));  // not yet timed out
  EXPECT_TRUE(should_stop(rule(), noisy(3), 16.0, why));
  EXPECT_EQ(why, "timeout");

  auto one = rule();
  one.min_samples = 1;  // the floor is min(3, min_samples)
  EXPECT_TRUE(should_stop(one, noisy(1), 16.0, why));
  EXPECT_EQ(why, "timeout");
}

TEST(ShouldStop, OneSampleLongerThanTheTimeout) {
  std::string why;
  EXPECT_TRUE(should_stop(rule(), {20.0}, 21.0, why));
  EXPECT_EQ(why, "timeout");
}

// Deterministic samples from a script, with a two-stage kernel breakdown and a clock.
class FakeTimer : public Timer {
 public:
  explicit FakeTimer(std::vector<double> script) : script_(std::move(script)) {}
  std::string name() const override { return "fake"; }
  std::vector<Sample> measure(const SampleHooks& hooks, int n) override {
    if (calls == 0) launches_before_first_call = *launches;
    ++calls;
    batches.push_back(n);
    std::vector<Sample> out;
    if (return_nothing) return out;
    for (int i = 0; i < n; ++i) {
      hooks.before();
      hooks.launch();
      Sample s;
      s.seconds = script_[next_++ % script_.size()];
      s.kernels = {{"stage_a", 0.6 * s.seconds}, {"stage_b", 0.3 * s.seconds}};
      s.sm_clock_mhz = next_ % 2 ? 1980 : 0;  // half the samples have no clock reading
      out.push_back(s);
    }
    return out;
  }

  int* launches = nullptr;
  int calls = 0;
  int launches_before_first_call = -1;
  bool return_nothing = false;
  std::vector<int> batches;

 private:
  std::vector<double> script_;
  std::size_t next_ = 0;
};

struct Counters {
  int launches = 0, befores = 0;
  SampleHooks hooks() {
    return {[this] { ++befores; }, [this] { ++launches; }};
  }
};

TEST(Measure, WarmupThenStopsOnNoise) {
  Counters c;
  FakeTimer t({0.01});
  t.launches = &c.launches;
  auto r = rule();
  r.warmup_runs = 3;
  const Measurement m = measure(t, c.hooks(), r);
  EXPECT_EQ(t.launches_before_first_call, 3);
  EXPECT_EQ(m.stop_reason, "noise");
  EXPECT_TRUE(m.converged);
  // Batches 1, 2, 4, 8: the first check with >= 10 samples is at 15.
  EXPECT_EQ(m.samples_s.size(), 15u);
  EXPECT_EQ(t.batches, (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(c.befores, 15);
  EXPECT_EQ(c.launches, 3 + 15);
  EXPECT_EQ(m.stats.n, 15u);
  EXPECT_DOUBLE_EQ(m.stats.median, 0.01);
  EXPECT_GT(m.wall_s, 0);

  ASSERT_EQ(m.kernels.size(), 2u);
  EXPECT_EQ(m.kernels[0].name, "stage_a");
  EXPECT_DOUBLE_EQ(m.kernels[0].median_s, 0.006);
  EXPECT_DOUBLE_EQ(m.kernels[0].share, 0.6);
  EXPECT_EQ(m.kernels[1].name, "stage_b");
  EXPECT_DOUBLE_EQ(m.kernels[1].share, 0.3);
  EXPECT_DOUBLE_EQ(m.sm_clock_mhz, 1980);  // zero readings ignored
}

TEST(Measure, StopsExactlyAtMaxSamples) {
  Counters c;
  FakeTimer t({1e-3, 2e-3, 3e-3});
  t.launches = &c.launches;
  auto r = rule();
  r.max_samples = 50;
  const Measurement m = measure(t, c.hooks(), r);
  EXPECT_EQ(m.stop_reason, "max_samples");
  EXPECT_FALSE(m.converged);
  EXPECT_EQ(m.samples_s.size(), 50u);  // the last batch is trimmed to fit
  EXPECT_DOUBLE_EQ(m.stats.median, 2e-3);
}

TEST(Measure, TimeoutStillTakesThreeSamples) {
  Counters c;
  // Samples far shorter than the timeout, so only the wall clock (surely past 0.1 ns once the
  // warm-up ran) can stop the loop, and no single sample exceeds the timeout on its own.
  FakeTimer t({1e-12, 2e-12, 3e-12});
  t.launches = &c.launches;
  auto r = rule();
  r.timeout_s = 1e-10;
  const Measurement m = measure(t, c.hooks(), r);
  EXPECT_EQ(m.stop_reason, "timeout");
  EXPECT_FALSE(m.converged);
  EXPECT_EQ(m.samples_s.size(), 3u);
  EXPECT_EQ(t.batches, (std::vector<int>{1, 2}));
}

TEST(Measure, RepeatedKernelNamesAreSummedPerSample) {
  class TwiceTimer : public Timer {
   public:
    std::string name() const override { return "twice"; }
    std::vector<Sample> measure(const SampleHooks& hooks, int n) override {
      std::vector<Sample> out(static_cast<std::size_t>(n));
      for (auto& s : out) {
        hooks.launch();
        s.seconds = 1.0;
        s.kernels = {{"chunk", 0.25}, {"final", 0.2}, {"chunk", 0.25}};
      }
      return out;
    }
  } t;
  auto r = rule();
  r.min_time_s = 0;
  const Measurement m = measure(t, {[] {}, [] {}}, r);
  ASSERT_EQ(m.kernels.size(), 2u);
  EXPECT_EQ(m.kernels[0].name, "chunk");
  EXPECT_DOUBLE_EQ(m.kernels[0].median_s, 0.5);
  EXPECT_DOUBLE_EQ(m.kernels[0].share, 0.5);
  EXPECT_EQ(m.kernels[1].name, "final");
  EXPECT_DOUBLE_EQ(m.sm_clock_mhz, 0);  // no clock readings at all
}

TEST(Measure, TimerWithNoSamplesIsAnError) {
  Counters c;
  FakeTimer t({1e-3});
  t.launches = &c.launches;
  t.return_nothing = true;
  try {
    measure(t, c.hooks(), rule());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitRuntime);
    EXPECT_NE(std::string(e.what()).find("fake"), std::string::npos);
  }
}

TEST(HostTimer, BeforeRunsOutsideEachSample) {
  auto timer = make_host_timer();
  EXPECT_EQ(timer->name(), "host");
  std::vector<char> log;
  volatile double sink = 0;
  SampleHooks hooks{[&] { log.push_back('b'); },
                    [&] {
                      log.push_back('l');
                      for (int i = 0; i < 20000; ++i) sink = sink + 1.0;
                    }};
  const auto samples = timer->measure(hooks, 3);
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(std::string(log.begin(), log.end()), "blblbl");
  for (const auto& s : samples) {
    EXPECT_GT(s.seconds, 0);
    EXPECT_LT(s.seconds, 10);
    EXPECT_TRUE(s.kernels.empty());
  }
}

TEST(Measure, RecordsTheTargetAndCapItRanUnder) {
  Counters c;
  FakeTimer t({1e-3});
  t.launches = &c.launches;
  auto r = rule();
  r.max_noise = 0.02, r.timeout_s = 3;
  const Measurement m = measure(t, c.hooks(), r);
  EXPECT_EQ(m.max_noise, 0.02);
  EXPECT_EQ(m.timeout_s, 3);
}

}  // namespace
}  // namespace gdn

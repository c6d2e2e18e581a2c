// Honest host rooflines (docs/method.md 5): the host peak is measured the way the CPU variants move
// memory (cold, read + write in place, at the case's size, on every core), so the CPU decode cases
// that printed 127-173 % of the old peak (a threaded memcpy of 2 x 256 MiB, with a one-core
// flush) stay at or below 100 %, and host timings record the rule they were taken under.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "config/config.h"
#include "device/host_peak.h"
#include "device/info.h"
#include "run/runner.h"

namespace gdn {
namespace {

TEST(HostPeak, WorkingSetIsHalfTheTrafficInWholePagesUpToStreamingSize) {
  HostWorkers workers(1);
  HostCacheFlush flush(workers, 0);
  const HostPeak peak(workers, flush, uint64_t(100) << 20);
  EXPECT_EQ(peak.streaming_size(), uint64_t(400) << 20);
  EXPECT_EQ(peak.working_set(0), 4096u);
  EXPECT_EQ(peak.working_set(8192), 4096u);
  EXPECT_EQ(peak.working_set(8194), 8192u);
  EXPECT_EQ(peak.working_set(2.0 * (64 << 20)), uint64_t(64) << 20);
  EXPECT_EQ(peak.working_set(1e12), uint64_t(400) << 20) << "huge cases are measured at the streaming size";
  EXPECT_EQ(HostPeak(workers, flush, 0).streaming_size(), uint64_t(256) << 20);
}

TEST(HostPeak, MeasuredOncePerSize) {
  HostWorkers workers;
  HostCacheFlush flush(workers, query_host().cache_bytes);
  HostPeak peak(workers, flush, query_host().cache_bytes);
  const double first = peak.bytes_per_second(2.0 * (4 << 20));
  EXPECT_TRUE(std::isfinite(first));
  EXPECT_GT(first, 1e8) << "100 MB/s is below any machine this runs on";
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(peak.bytes_per_second(2.0 * (4 << 20) - 100), first) << "same 4 KiB-rounded working set";
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1e-3);
}

// The decode shapes of configs/default.yaml that printed 172.9 % (kv B=32), 127 % (vk B=32) and
// 142 % (TP2 B=8) on a 16-core H200 host. None prints a figure above 100 %: each is below the peak
// measured at its size, or, where its working set fits the host's caches (a 2-core development
// host with 304 MiB of them measured 31-33 GB/s against a 30-31 GB/s in-place peak),
// gets no figure and the note that says why (so does a case timed faster than a peak measured
// while other work loaded the host).
TEST(HostRoofline, DecodeCasesThatOnceExceededThePeakNowStayBelowIt) {
  const auto cfg = parse_config(R"(
defaults: {op: decode, variant: decode/cpu, head_dim: 128, state_dtype: f32}
cases:
  - {heads: "16/32", layout: [kv, vk], batch: 32}
  - {heads: "8/16", layout: [kv, vk], batch: 8}
)",
                                "roofline.yaml");
  RunOptions opt;
  opt.progress = false;
  opt.verify = false;
  opt.host_rule.max_noise = 0.05;
  opt.host_rule.timeout_s = 1;
  RunReport report;
  ASSERT_EQ(run_sweep(cfg, opt, report), 0);
  ASSERT_EQ(report.cases.size(), 4u);
  for (const auto& r : report.cases) {
    SCOPED_TRACE(r.shape_key());
    ASSERT_TRUE(r.timed);
    EXPECT_EQ(r.timer, "host");
    EXPECT_EQ(r.peak.kind, "host_bandwidth");
    EXPECT_NE(r.peak.source.find("MiB after a cold flush"), std::string::npos) << r.peak.source;
    if (r.roofline_note.empty()) {
      EXPECT_GT(r.roofline_pct, 0);
      EXPECT_LE(r.roofline_pct, 100);
    } else {
      // Declined, with the reason: the working set fits the caches, or (a host loaded by other
      // work while its peak was measured, as under the sanitizer beside a build) the peak or the
      // byte model does not hold. Never a figure above 100 %.
      EXPECT_TRUE(std::isnan(r.roofline_pct)) << r.roofline_pct;
      EXPECT_NE(r.roofline_note.find("so no roofline figure: "), std::string::npos) << r.roofline_note;
      EXPECT_TRUE(r.roofline_note.find("fits in the host's caches") != std::string::npos ||
                  r.roofline_note.find("the byte model counts bytes") != std::string::npos)
          << r.roofline_note;
    }
    EXPECT_EQ(r.timing.max_noise, 0.05) << "the host rule is the one recorded";
    EXPECT_EQ(r.timing.timeout_s, 1);
  }
  EXPECT_TRUE(report.calibration["host_bandwidth"].is_number());
}

}  // namespace
}  // namespace gdn

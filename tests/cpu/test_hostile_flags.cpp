// Flags that used to switch a check off or take the host down: each is refused with exit 3
// naming the flag and the value, before any config is read or case run (src/cli/option_checks).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "bounded_child.h"
#include "cli/option_checks.h"
#include "test_support.h"
#include "timing/measure.h"
#include "timing/timer.h"

namespace gdn {
namespace {

const std::string kTiny = std::string(GDN_SOURCE_DIR) + "/tests/data/tiny.yaml";

void expect_flag_refused(std::vector<std::string> args, const std::string& flag) {
  auto r = test::gdnbench(args);
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_LT(r.seconds, test::kRefusalSeconds) << r.out;
  EXPECT_TRUE(test::contains(r.out, flag)) << "expected " << flag << " in:\n" << r.out;
}

TEST(HostileFlags, NanAndInfinityNeverPass) {
  for (const char* flag : {"--max-noise", "--timeout", "--min-time", "--host-max-noise", "--host-timeout"})
    for (const char* value : {"nan", "NaN", "inf", "-inf", "1e400"})
      expect_flag_refused({"run", "--config", kTiny, flag, value}, flag);
  expect_flag_refused({"compare", "a.json", "b.json", "--threshold", "nan"}, "--threshold");
  expect_flag_refused({"compare", "a.json", "b.json", "--threshold", "inf"}, "--threshold");
  expect_flag_refused({"compare", "a.json", "b.json", "--threshold", "0"}, "--threshold");
}

TEST(HostileFlags, IntegersAreRefusedNotClamped) {
  expect_flag_refused({"run", "--config", kTiny, "--seed", "18446744073709551617"}, "--seed");
  expect_flag_refused({"run", "--config", kTiny, "--seed", "-1"}, "--seed");
  expect_flag_refused({"verify", "--config", kTiny, "--seed", "1e3"}, "--seed");
  expect_flag_refused({"run", "--config", kTiny, "--warmup", "1000000000"}, "--warmup");
  expect_flag_refused({"run", "--config", kTiny, "--threads", "1000000"}, "--threads");
  expect_flag_refused({"verify", "--config", kTiny, "--threads", std::to_string(cli::max_threads() + 1)}, "--threads");
  expect_flag_refused({"run", "--config", kTiny, "--max-samples", "0"}, "--max-samples");
  expect_flag_refused({"run", "--config", kTiny, "--device", "-2"}, "--device");
}

TEST(HostileFlags, FlagsMustAgreeWithEachOther) {
  expect_flag_refused({"run", "--config", kTiny, "--max-samples", "3", "--min-samples", "10"}, "--min-samples 10");
  expect_flag_refused({"run", "--config", kTiny, "--max-samples", "5"}, "--max-samples");  // below the default 10
}

TEST(HostileFlags, TheChecksAcceptTheirWholeRange) {
  CLI::App app;
  double v = 0;
  app.add_option("--x", v)->check(cli::finite_range(0, 100, true));
  for (const char* ok : {"0.001", "100", "5", "1e1"}) {
    const char* argv[] = {"t", "--x", ok};
    EXPECT_NO_THROW(app.parse(3, argv)) << ok;
  }
  for (const char* bad : {"0", "100.5", "-1", "nan", "inf", "x", ""}) {
    const char* argv[] = {"t", "--x", bad};
    EXPECT_THROW(app.parse(3, argv), CLI::ParseError) << bad;
  }
}

// --warmup 1000000000 ignored the per-case cap and hung: warm-up now counts against --timeout.
TEST(HostileFlags, WarmupCountsAgainstTheTimeCap) {
  StoppingRule rule = StoppingRule::host();
  rule.warmup_runs = 1'000'000'000;
  rule.timeout_s = 0.2;
  SampleHooks hooks;
  hooks.launch = [] { std::this_thread::sleep_for(std::chrono::milliseconds(1)); };
  auto timer = make_host_timer();
  const auto t0 = std::chrono::steady_clock::now();
  const auto m = measure(*timer, hooks, rule);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 2.0);
  EXPECT_EQ(m.stop_reason, "timeout");
  EXPECT_GE(m.samples_s.size(), 1u);
}

}  // namespace
}  // namespace gdn

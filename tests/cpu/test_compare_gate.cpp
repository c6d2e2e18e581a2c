// The gate's refusals (exit 5) and their allow flags, and the noise rule between runs: the U test
// over repetitions, the fastest repetition below five, CPU times gated only when asked.
#include <gtest/gtest.h>

#include <algorithm>

#include "compare/compare.h"
#include "core/errors.h"

namespace gdn {
namespace {

CaseRecord rec(int64_t batch, double median_us, const std::string& device = "NVIDIA H200") {
  CaseRecord r;
  r.case_name = "decode";
  r.variant = "decode/cuda_simple";
  r.shape.op = OpKind::decode;
  r.shape.batch = batch;
  r.mode = "cold";
  r.device = device;
  r.verify.ran = r.verify.pass = true;
  r.timed = true;
  r.timer = "cupti";
  r.timing.stats.n = 100;
  r.timing.stats.median = median_us * 1e-6;
  r.timing.stats.noise = 0.001;
  r.timing.converged = true;
  r.timing.stop_reason = "noise";
  return r;
}

// A record measured once per median in `reps_us`, each repetition quiet (0.1 % noise).
CaseRecord repeated(int64_t batch, std::vector<double> reps_us, double noise = 0.001) {
  CaseRecord r = rec(batch, 0);
  for (double us : reps_us) r.timing.repetitions.push_back({us * 1e-6, noise, 100, true});
  std::sort(reps_us.begin(), reps_us.end());
  r.timing.stats.median = reps_us[reps_us.size() / 2] * 1e-6;
  return r;
}

RunReport report(std::vector<CaseRecord> cases, bool complete = true) {
  RunReport r;
  r.complete = complete;
  r.cases = std::move(cases);
  return r;
}

bool mentions(const std::vector<std::string>& lines, const std::string& part) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(part) != std::string::npos; });
}

TEST(Gate, CleanComparisonPasses) {
  const auto r = compare_reports(report({rec(1, 10), rec(8, 20)}), report({rec(1, 10), rec(8, 20)}), {});
  EXPECT_TRUE(r.refused.empty());
  EXPECT_TRUE(r.allowed.empty());
  EXPECT_EQ(r.exit_code(), kExitOk);
}

// A plugin variant timed from a different library is named (it is what the user gates), never refused.
TEST(Gate, AChangedPluginLibraryIsNamedNotRefused) {
  auto plugin = [](int64_t batch, const std::string& sha) {
    CaseRecord r = rec(batch, 10);
    r.variant = "plugin:mine/decode_fast";
    r.origin = {"plugin", "/build/libmine.so", sha};
    return r;
  };
  const std::string a(64, 'a'), b(64, 'b');
  auto r = compare_reports(report({plugin(1, a), plugin(8, a)}), report({plugin(1, b), plugin(8, b)}), {});
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_TRUE(mentions(r.notes, "plugin:mine/decode_fast: its library changed"));
  EXPECT_TRUE(mentions(r.notes, "sha256 aaaaaaaaaaaa, NEW /build/libmine.so sha256 bbbbbbbbbbbb"));
  EXPECT_EQ(r.exit_code(), kExitOk);
  EXPECT_TRUE(mentions({format_compare_table(r)}, "note: plugin:mine/decode_fast"));
  r = compare_reports(report({plugin(1, a)}), report({plugin(1, a)}), {});
  EXPECT_TRUE(r.notes.empty());
}

TEST(Gate, MissingCasesRefuseUnlessAllowed) {
  const auto base = report({rec(1, 10), rec(8, 20), rec(64, 90)}), next = report({rec(1, 10)});
  auto r = compare_reports(base, next, {});
  EXPECT_EQ(r.exit_code(), kExitCannotCompare);
  EXPECT_TRUE(mentions(r.refused, "2 cases of BASE have no time in NEW")) << r.refused.front();
  EXPECT_TRUE(mentions(r.refused, "--allow-missing"));
  // A case NEW skipped or failed to time is missing too.
  auto skipped = rec(8, 0);
  skipped.status = CaseStatus::skipped, skipped.timed = false;
  EXPECT_EQ(compare_reports(report({rec(1, 10), rec(8, 20)}), report({rec(1, 10), skipped}), {}).exit_code(),
            kExitCannotCompare);

  CompareOptions allow;
  allow.allow_missing = true;
  r = compare_reports(base, next, allow);
  EXPECT_EQ(r.exit_code(), kExitOk);
  EXPECT_TRUE(mentions(r.allowed, "accepted by --allow-missing"));
  // A regression still fails, with its own code.
  r = compare_reports(base, report({rec(1, 20)}), allow);
  EXPECT_EQ(r.exit_code(), kExitRegression);
}

TEST(Gate, IncompleteReportRefusesUnlessAllowed) {
  for (bool base_complete : {false, true}) {
    const auto base = report({rec(1, 10)}, base_complete), next = report({rec(1, 10)}, !base_complete);
    auto r = compare_reports(base, next, {});
    EXPECT_EQ(r.exit_code(), kExitCannotCompare);
    EXPECT_TRUE(mentions(r.refused, base_complete ? "NEW is incomplete" : "BASE is incomplete"));
    CompareOptions allow;
    allow.allow_incomplete = true;
    r = compare_reports(base, next, allow);
    EXPECT_EQ(r.exit_code(), kExitOk);
    EXPECT_TRUE(mentions(r.allowed, "--allow-incomplete"));
  }
}

TEST(Gate, DeviceChangeRefusesUnlessAllowedThenMatchesAcrossDevices) {
  const auto base = report({rec(1, 10), rec(8, 20)});
  const auto next = report({rec(1, 10, "NVIDIA H100 80GB HBM3"), rec(8, 30, "NVIDIA H100 80GB HBM3")});
  auto r = compare_reports(base, next, {});
  EXPECT_EQ(r.exit_code(), kExitCannotCompare);
  EXPECT_TRUE(mentions(r.refused, "device change: BASE ran on NVIDIA H200, NEW on NVIDIA H100 80GB HBM3"));

  CompareOptions allow;
  allow.allow_device_change = true;
  r = compare_reports(base, next, allow);
  ASSERT_EQ(r.rows.size(), 2u);
  for (const auto& row : r.rows) EXPECT_EQ(row.device, "NVIDIA H200 -> NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.rows[1].status, CompareStatus::slower);  // B=8: 20 -> 30 us, compared across the devices
  EXPECT_EQ(r.exit_code(), kExitRegression);
  EXPECT_TRUE(mentions(r.allowed, "--allow-device-change"));

  // A GPU host whose driver broke: every GPU case skipped (no device), only CPU cases timed.
  auto cpu = rec(1, 500, "host: Intel(R) Xeon(R) Processor");
  cpu.variant = "decode/cpu";
  auto no_gpu = rec(8, 0, "");
  no_gpu.status = CaseStatus::skipped, no_gpu.timed = false;
  const auto broken = compare_reports(report({rec(8, 20), cpu}), report({no_gpu, cpu}), {});
  EXPECT_EQ(broken.exit_code(), kExitCannotCompare);
  EXPECT_TRUE(mentions(broken.refused, "device change"));
  EXPECT_TRUE(mentions(broken.refused, "1 case of BASE has no time in NEW"));
}

TEST(Gate, NewDeviceAlongsideTheOldIsNoChange) {
  const auto r = compare_reports(report({rec(1, 10)}), report({rec(1, 10), rec(1, 9, "NVIDIA H100 80GB HBM3")}), {});
  EXPECT_EQ(r.exit_code(), kExitOk);
}

TEST(Gate, NothingComparedAlwaysRefuses) {
  CompareOptions all;
  all.allow_missing = all.allow_incomplete = all.allow_device_change = true;
  // Empty reports, and reports with no case in common.
  for (const auto& [base, next] : {std::pair{report({}), report({})}, std::pair{report({rec(1, 10)}), report({rec(8, 10)})}}) {
    const auto r = compare_reports(base, next, all);
    EXPECT_EQ(r.exit_code(), kExitCannotCompare);
    EXPECT_TRUE(mentions(r.refused, "nothing compared"));
  }
  // The case: a GPU baseline against a CPU-only run on a host of another CPU model.
  auto cpu_base = rec(1, 500, "host: AMD EPYC 9654"), cpu_new = rec(1, 500, "host: Intel(R) Xeon(R) Processor");
  cpu_base.variant = cpu_new.variant = "decode/cpu";
  const auto r = compare_reports(report({rec(8, 20), cpu_base}), report({cpu_new}), {});
  EXPECT_EQ(r.exit_code(), kExitCannotCompare);
  EXPECT_TRUE(mentions(r.refused, "nothing compared"));
  EXPECT_TRUE(mentions(r.refused, "device change"));
}

TEST(Gate, RefusalTakesPrecedenceOverARegression) {
  const auto r = compare_reports(report({rec(1, 10), rec(8, 20)}), report({rec(1, 30)}), {});
  EXPECT_TRUE(r.regression);
  EXPECT_EQ(r.exit_code(), kExitCannotCompare);
}

TEST(Gate, ViewsSayWhyAndWhatWasAllowed) {
  const auto r = compare_reports(report({rec(1, 10), rec(8, 20)}), report({rec(1, 10)}, false), {});
  const std::string table = format_compare_table(r);
  EXPECT_NE(table.find("refused: 1 case of BASE has no time in NEW"), std::string::npos) << table;
  EXPECT_NE(table.find("refused: NEW is incomplete"), std::string::npos) << table;
  const std::string md = format_compare_markdown(r);
  EXPECT_NE(md.find("- refused: NEW is incomplete"), std::string::npos) << md;
  CompareOptions allow;
  allow.allow_incomplete = true;
  EXPECT_NE(format_compare_table(compare_reports(report({rec(1, 10)}), report({rec(1, 10)}, false), allow))
                .find("allowed: NEW is incomplete"),
            std::string::npos);
}

// ---- the noise between runs ------------------------------------------------------------------

TEST(Repetitions, UTestFlagsASlowdownEveryRepetitionShows) {
  const auto base = repeated(1, {100, 101, 99, 100.5, 99.5}), next = repeated(1, {110, 111, 109, 110.5, 112});
  const auto r = compare_reports(report({base}), report({next}), {});
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].status, CompareStatus::slower);
  EXPECT_NEAR(r.rows[0].p_value, 2.0 / 252.0, 1e-12);
  EXPECT_NEAR(r.rows[0].change_pct, 10.5, 1e-9);  // median of the medians: 100 -> 110.5
  EXPECT_NE(r.rows[0].note.find("U test p=0.008, 5 vs 5 repetitions"), std::string::npos) << r.rows[0].note;
  EXPECT_EQ(r.exit_code(), kExitRegression);
  EXPECT_EQ(compare_reports(report({next}), report({base}), {}).rows[0].status, CompareStatus::faster);
}

TEST(Repetitions, UTestCallsABimodalHostNoisy) {
  // A 2-core host: each repetition either had its second core or did not (measured: 1.0 and 1.8 ms).
  const auto base = repeated(1, {1000, 1800, 1000, 1800, 1000}), next = repeated(1, {1800, 1000, 1800, 1800, 1000});
  const auto r = compare_reports(report({base}), report({next}), {});
  EXPECT_EQ(r.rows[0].status, CompareStatus::noisy);
  EXPECT_NE(r.rows[0].note.find("not below 0.05"), std::string::npos) << r.rows[0].note;
  EXPECT_EQ(r.exit_code(), kExitOk);
}

TEST(Repetitions, SmallChangeIsSameEvenWhenSignificant) {
  // Every repetition 1 % slower: significant, but below the 5 % threshold (the least effect).
  const auto r = compare_reports(report({repeated(1, {100, 100.1, 100.2, 100.3, 100.4})}),
                                 report({repeated(1, {101, 101.1, 101.2, 101.3, 101.4})}), {});
  EXPECT_EQ(r.rows[0].status, CompareStatus::same);
  EXPECT_LT(r.rows[0].p_value, 0.05);
}

TEST(Repetitions, BelowFiveTheFastestRepetitionDecides) {
  // Three repetitions each: one busy repetition per side does not move the fastest.
  const auto base = repeated(1, {100, 180, 100.2}), next = repeated(1, {100.1, 100.3, 190});
  auto r = compare_reports(report({base}), report({next}), {});
  EXPECT_EQ(r.rows[0].status, CompareStatus::same);
  EXPECT_NEAR(r.rows[0].base_s, 100e-6, 1e-15);
  EXPECT_NEAR(r.rows[0].new_s, 100.1e-6, 1e-15);
  EXPECT_TRUE(std::isnan(r.rows[0].p_value));
  EXPECT_NE(r.rows[0].note.find("fastest of 3 vs 3 repetitions"), std::string::npos) << r.rows[0].note;
  // A slowdown every repetition shows is still found, against the noise of the fastest.
  r = compare_reports(report({base}), report({repeated(1, {120, 121, 122})}), {});
  EXPECT_EQ(r.rows[0].status, CompareStatus::slower);
  // Five on one side only: the fastest-repetition rule, not the U test.
  r = compare_reports(report({repeated(1, {100, 100, 100, 100, 100})}), report({next}), {});
  EXPECT_TRUE(std::isnan(r.rows[0].p_value));
}

TEST(Repetitions, MinimumIsAnOption) {
  CompareOptions three;
  three.min_repetitions = 3;
  const auto r = compare_reports(report({repeated(1, {100, 101, 102})}), report({repeated(1, {120, 121, 122})}), three);
  EXPECT_FALSE(std::isnan(r.rows[0].p_value));
  EXPECT_NEAR(r.rows[0].p_value, 0.1, 1e-12);
  EXPECT_EQ(r.rows[0].status, CompareStatus::noisy);  // 3 vs 3 never reaches 0.05
}

TEST(HostTimings, NotGatedUnlessAThresholdIsGiven) {
  auto base = rec(1, 1000, "host: test CPU"), next = rec(1, 1800, "host: test CPU");
  base.variant = next.variant = "decode/cpu";
  base.timer = next.timer = "host";
  auto r = compare_reports(report({base}), report({next}), {});
  EXPECT_EQ(r.rows[0].status, CompareStatus::noisy);
  EXPECT_NE(r.rows[0].note.find("CPU time, not gated"), std::string::npos) << r.rows[0].note;
  EXPECT_EQ(r.exit_code(), kExitOk);

  CompareOptions gated;
  gated.host_threshold_pct = 50;
  r = compare_reports(report({base}), report({next}), gated);
  EXPECT_EQ(r.rows[0].status, CompareStatus::slower);  // +80 % > 50 %
  EXPECT_DOUBLE_EQ(r.rows[0].threshold_pct, 50.0);
  gated.host_threshold_pct = 100;
  EXPECT_EQ(compare_reports(report({base}), report({next}), gated).rows[0].status, CompareStatus::same);
  // The host threshold never lowers a case's own.
  next.threshold_pct = 90;
  gated.host_threshold_pct = 5;
  EXPECT_DOUBLE_EQ(compare_reports(report({base}), report({next}), gated).rows[0].threshold_pct, 90.0);
}

}  // namespace
}  // namespace gdn

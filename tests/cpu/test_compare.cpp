#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "compare/compare.h"
#include "core/errors.h"

namespace gdn {
namespace {

Shape decode_shape(int64_t batch) {
  Shape s;
  s.op = OpKind::decode;
  s.batch = batch;
  return s;
}

// A timed, verified record whose median and noise are set directly.
CaseRecord rec(int64_t batch, double median_us, double noise_pct = 0.1, bool converged = true) {
  CaseRecord r;
  r.case_name = "decode";
  r.variant = "decode/cuda_simple";
  r.shape = decode_shape(batch);
  r.mode = "cold";
  r.device = "NVIDIA H200";
  r.verify.ran = true;
  r.verify.pass = true;
  r.timed = true;
  r.timer = "cupti";
  r.timing.stats.n = 100;
  r.timing.stats.median = median_us * 1e-6;
  r.timing.stats.noise = noise_pct / 100;
  r.timing.converged = converged;
  r.timing.stop_reason = converged ? "noise" : "timeout";
  return r;
}

RunReport report(std::vector<CaseRecord> cases) {
  RunReport r;
  r.complete = true;
  r.cases = std::move(cases);
  return r;
}

CompareResult cmp(const CaseRecord& base, const CaseRecord& next, double threshold = 5.0) {
  return compare_reports(report({base}), report({next}), CompareOptions{threshold});
}

CompareStatus status_of(const CaseRecord& base, const CaseRecord& next, double threshold = 5.0) {
  auto r = cmp(base, next, threshold);
  EXPECT_EQ(r.rows.size(), 1u);
  return r.rows.empty() ? CompareStatus::same : r.rows[0].status;
}

TEST(Compare, StatusNames) {
  EXPECT_EQ(to_string(CompareStatus::faster), "faster");
  EXPECT_EQ(to_string(CompareStatus::slower), "slower");
  EXPECT_EQ(to_string(CompareStatus::same), "same");
  EXPECT_EQ(to_string(CompareStatus::noisy), "noisy");
  EXPECT_EQ(to_string(CompareStatus::missing), "missing");
  EXPECT_EQ(to_string(CompareStatus::added), "new");
  EXPECT_EQ(to_string(CompareStatus::failed_verification), "failed-verification");
}

TEST(Compare, IdenticalReportsCompareClean) {
  const auto r = report({rec(1, 8.0), rec(32, 53.0, 0.4), rec(256, 368.0, 0.05)});
  const auto result = compare_reports(r, r, {});
  ASSERT_EQ(result.rows.size(), 3u);
  for (const auto& row : result.rows) {
    EXPECT_EQ(row.status, CompareStatus::same);
    EXPECT_DOUBLE_EQ(row.change_pct, 0.0);
  }
  EXPECT_FALSE(result.regression);
  EXPECT_FALSE(result.verify_failure);
  EXPECT_EQ(result.exit_code(), 0);
}

TEST(Compare, SlowerFasterSame) {
  auto slower = cmp(rec(1, 100), rec(1, 110));
  ASSERT_EQ(slower.rows.size(), 1u);
  EXPECT_EQ(slower.rows[0].status, CompareStatus::slower);
  EXPECT_NEAR(slower.rows[0].change_pct, 10.0, 1e-9);
  EXPECT_NEAR(slower.rows[0].noise_pct, 2 * std::sqrt(0.01 + 0.01), 1e-9);
  EXPECT_DOUBLE_EQ(slower.rows[0].base_s, 100e-6);
  EXPECT_DOUBLE_EQ(slower.rows[0].new_s, 110e-6);
  EXPECT_TRUE(slower.regression);
  EXPECT_EQ(slower.exit_code(), 1);

  auto faster = cmp(rec(1, 100), rec(1, 90));
  EXPECT_EQ(faster.rows[0].status, CompareStatus::faster);
  EXPECT_EQ(faster.exit_code(), 0);  // improvements never fail the gate

  EXPECT_EQ(status_of(rec(1, 100), rec(1, 104.9)), CompareStatus::same);  // inside the threshold
  EXPECT_EQ(status_of(rec(1, 100), rec(1, 95.1)), CompareStatus::same);
}

TEST(Compare, NoiseGating) {
  // Base noise 3 % is above threshold / 2 = 2.5 %; combined 2 * sqrt(3^2 + 0.1^2) = 6.003 %.
  EXPECT_EQ(status_of(rec(1, 100, 3.0), rec(1, 106)), CompareStatus::noisy);   // 6 % is not clear of it
  EXPECT_EQ(status_of(rec(1, 100, 3.0), rec(1, 107)), CompareStatus::slower);  // 7 % is
  EXPECT_EQ(status_of(rec(1, 100, 3.0), rec(1, 102)), CompareStatus::noisy);
  // Quiet sides, but a change inside the combined noise is not a verdict either.
  EXPECT_EQ(status_of(rec(1, 100, 2.4), rec(1, 106, 2.4)), CompareStatus::same);  // 6 < 2*sqrt(2*2.4^2)=6.79
  // Not converged (timeout) on either side: noisy unless clearly outside.
  EXPECT_EQ(status_of(rec(1, 100, 0.1, false), rec(1, 103)), CompareStatus::noisy);
  EXPECT_EQ(status_of(rec(1, 100), rec(1, 103, 0.1, false)), CompareStatus::noisy);
  EXPECT_EQ(status_of(rec(1, 100, 0.1, false), rec(1, 120)), CompareStatus::slower);
  // Unknown noise (fewer than 5 samples: infinite, or null read back as NaN) never decides.
  EXPECT_EQ(status_of(rec(1, 100, INFINITY), rec(1, 150)), CompareStatus::noisy);
  EXPECT_EQ(status_of(rec(1, 100), rec(1, 50, NAN)), CompareStatus::noisy);
  const auto row = cmp(rec(1, 100, 3.0), rec(1, 102)).rows[0];
  EXPECT_NE(row.note.find("base noise 3.00%"), std::string::npos) << row.note;
}

TEST(Compare, ThresholdOverrideFromTheNewRecord) {
  auto next = rec(1, 110);
  next.threshold_pct = 20.0;
  const auto r = cmp(rec(1, 100), next);
  EXPECT_EQ(r.rows[0].status, CompareStatus::same);
  EXPECT_DOUBLE_EQ(r.rows[0].threshold_pct, 20.0);
  EXPECT_EQ(r.exit_code(), 0);
  // The base's override is not used: the new config decides.
  auto base = rec(1, 100);
  base.threshold_pct = 20.0;
  EXPECT_EQ(status_of(base, rec(1, 110)), CompareStatus::slower);
  // The command-line default applies otherwise.
  EXPECT_EQ(status_of(rec(1, 100), rec(1, 110), 15.0), CompareStatus::same);
}

TEST(Compare, MissingFailsTheGateNewDoesNot) {
  const auto base = report({rec(1, 8), rec(32, 53)});
  const auto r = compare_reports(base, report({rec(32, 53), rec(256, 368)}), {});
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].status, CompareStatus::same);   // B=32
  EXPECT_EQ(r.rows[1].status, CompareStatus::added);  // B=256, only in new
  EXPECT_EQ(r.rows[2].status, CompareStatus::missing);  // B=1, only in base
  EXPECT_EQ(r.rows[2].shape_key, decode_shape(1).key());
  EXPECT_EQ(r.exit_code(), kExitCannotCompare);
  // A case only NEW holds never fails.
  EXPECT_EQ(compare_reports(base, report({rec(1, 8), rec(32, 53), rec(256, 368)}), {}).exit_code(), 0);
}

TEST(Compare, MatchesOnDeviceAndMode) {
  auto other_gpu = rec(1, 50);
  other_gpu.device = "NVIDIA B200";
  auto hot = rec(1, 50);
  hot.mode = "hot";
  const auto r = compare_reports(report({rec(1, 100)}), report({other_gpu, hot}), {});
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].status, CompareStatus::added);
  EXPECT_EQ(r.rows[1].status, CompareStatus::added);
  EXPECT_EQ(r.rows[2].status, CompareStatus::missing);
}

TEST(Compare, FailedVerificationInNewFails) {
  auto broken = rec(1, 50);  // faster, but wrong
  broken.verify.pass = false;
  broken.verify.checks = {{"o", 0.5, 1.0, 5e-3, 100, 0, 3, 0, false}};
  auto r = cmp(rec(1, 100), broken);
  EXPECT_EQ(r.rows[0].status, CompareStatus::failed_verification);
  EXPECT_TRUE(r.verify_failure);
  EXPECT_FALSE(r.regression);
  EXPECT_EQ(r.exit_code(), 1);
  EXPECT_NE(r.rows[0].note.find("o rel_l2"), std::string::npos) << r.rows[0].note;

  auto by_status = rec(1, 100);
  by_status.status = CaseStatus::verify_failed;
  by_status.timed = false;
  EXPECT_EQ(status_of(rec(1, 100), by_status), CompareStatus::failed_verification);
  // Also when there is no baseline for it.
  EXPECT_EQ(compare_reports(report({rec(8, 10)}), report({rec(8, 10), broken}), {}).exit_code(), 1);
  // A base that failed verification is no baseline: the fixed kernel is "new", whatever its speed.
  auto base_broken = rec(1, 10);
  base_broken.status = CaseStatus::verify_failed;
  EXPECT_EQ(status_of(base_broken, rec(1, 100)), CompareStatus::added);
}

TEST(Compare, SkippedAndErrorRecordsAreMissingData) {
  auto skipped = rec(1, 0);
  skipped.status = CaseStatus::skipped;
  skipped.timed = false;
  skipped.reason = "needs sm_100";
  auto error = rec(1, 0);
  error.status = CaseStatus::error;
  error.timed = false;
  error.reason = "CUDA error: illegal address";

  auto r = cmp(rec(1, 100), error);
  EXPECT_EQ(r.rows[0].status, CompareStatus::missing);
  EXPECT_NE(r.rows[0].note.find("illegal address"), std::string::npos) << r.rows[0].note;
  EXPECT_EQ(r.exit_code(), kExitCannotCompare);  // missing, and nothing compared
  EXPECT_EQ(status_of(rec(1, 100), skipped), CompareStatus::missing);
  EXPECT_EQ(status_of(skipped, rec(1, 100)), CompareStatus::added);
  EXPECT_EQ(status_of(error, rec(1, 100)), CompareStatus::added);
  // Skipped on both sides: the device cannot run it; no row at all.
  EXPECT_TRUE(cmp(skipped, skipped).rows.empty());
  EXPECT_EQ(cmp(skipped, skipped).exit_code(), kExitCannotCompare);  // nothing compared
}

TEST(Compare, VariantFilters) {
  // A CPU row that got slower on another host, a GPU row that stayed the same.
  auto cpu_base = rec(1, 100), cpu_new = rec(1, 150);
  cpu_base.variant = cpu_new.variant = "decode/cpu";
  const auto base = report({cpu_base, rec(8, 10)}), next = report({cpu_new, rec(8, 10)});
  CompareOptions all;
  EXPECT_EQ(compare_reports(base, next, all).exit_code(), 1);

  CompareOptions no_cpu;
  no_cpu.exclude = {"cpu"};  // no '/': matches the name after "decode/"
  const auto r = compare_reports(base, next, no_cpu);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].variant, "decode/cuda_simple");
  EXPECT_EQ(r.exit_code(), 0);

  CompareOptions only_cpu;
  only_cpu.variants = {"decode/c?u", "mtp/*"};
  const auto c = compare_reports(base, next, only_cpu);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].variant, "decode/cpu");
  EXPECT_EQ(c.rows[0].status, CompareStatus::slower);

  // Filtered-out base rows are not reported missing.
  CompareOptions cuda;
  cuda.variants = {"*/cuda_*"};
  const auto m = compare_reports(base, report({rec(8, 10)}), cuda);
  ASSERT_EQ(m.rows.size(), 1u);
  EXPECT_EQ(m.rows[0].status, CompareStatus::same);
}

TEST(Compare, TextAndMarkdownViews) {
  auto pipe = rec(32, 53);
  pipe.variant = "decode/a|b";
  const auto r = compare_reports(report({rec(1, 100), rec(256, 368), pipe}),
                                 report({rec(1, 110), rec(256, 368), pipe, rec(64, 99)}), {});
  const std::string table = format_compare_table(r);
  EXPECT_NE(table.find("slower"), std::string::npos) << table;
  EXPECT_NE(table.find("+10.00%"), std::string::npos) << table;
  EXPECT_NE(table.find("100.00 us"), std::string::npos) << table;
  EXPECT_NE(table.find("110.00 us"), std::string::npos) << table;
  EXPECT_NE(table.find("FAIL: 1 slower, 2 same, 1 new"), std::string::npos) << table;
  // Worst rows first.
  EXPECT_LT(table.find("slower"), table.find("same"));

  const std::string md = format_compare_markdown(r);
  const std::string first_line = md.substr(0, md.find('\n'));
  EXPECT_NE(first_line.find("FAIL: 1 slower, 2 same, 1 new"), std::string::npos) << md;
  EXPECT_NE(md.find("| status | variant | shape |"), std::string::npos) << md;
  EXPECT_NE(md.find("|---|"), std::string::npos) << md;
  EXPECT_NE(md.find("**slower**"), std::string::npos) << md;
  EXPECT_NE(md.find("decode/a\\|b"), std::string::npos) << md;
  // Header + separator + one line per row after the summary and a blank line.
  EXPECT_EQ(std::count(md.begin(), md.end(), '\n'), 2 + 2 + 4);

  const auto clean = compare_reports(report({rec(1, 100)}), report({rec(1, 100)}), {});
  EXPECT_EQ(format_compare_markdown(clean).rfind("**gdnbench compare PASS: 1 same**", 0), 0u);
}

}  // namespace
}  // namespace gdn

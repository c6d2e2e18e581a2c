// Baseline gate: matches cases of two reports and classifies each (README "compare").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compare/change_test.h"
#include "report/report.h"

namespace gdn {

std::string_view to_string(CompareStatus);  // "faster", ..., "new" for added, "failed-verification"

struct CompareRow {
  std::string op, variant, shape_key, mode, device;  // device "BASE -> NEW" when matched across devices
  CompareStatus status = CompareStatus::same;
  double base_s = 0, new_s = 0;  // the times compared (change_test.h)
  double change_pct = 0;         // (new - base) / base * 100
  double threshold_pct = 0;      // the threshold applied to this row
  double noise_pct = 0;          // combined noise of the two times, percent (NaN under the U test)
  double p_value = kNaN;         // the U test's, where it decided
  bool in_base = false;          // BASE holds the case
  std::string note;
};

struct CompareOptions {
  double threshold_pct = 5.0;  // default; a case's threshold_pct in NEW's records overrides
  // Only variants matching one of `variants` (all when empty) and none of `exclude`; globs as in
  // `run --variant` (a glob without '/' also matches the part after "<op>/"). A GPU baseline
  // compared across GPU hosts gates CPU rows on a different CPU each time: `exclude = {"cpu"}`.
  std::vector<std::string> variants, exclude;
  // Records timed by the host timer (CPU variants) gate only when this is set, then on at least
  // this threshold: a shared host's load moves them by up to 4x between runs, which no noise
  // model sees (docs/ci.md "CPU timings"). Unset, such a row is never slower or faster, only noisy.
  std::optional<double> host_threshold_pct;
  int min_repetitions = kUTestMinRepetitions;  // the U test's minimum on both sides
  double alpha = kUTestAlpha;
  // What the gate otherwise refuses (exit 5): cases of BASE missing from NEW, a report that says
  // "complete": false, a device model of BASE that NEW did not run on. With allow_device_change,
  // cases left unmatched are matched across devices.
  bool allow_missing = false, allow_incomplete = false, allow_device_change = false;
};

struct CompareResult {
  std::vector<CompareRow> rows;
  bool regression = false;       // any slower row
  bool verify_failure = false;   // any failed-verification row
  // Why the gate could not compare what it was asked to (compare/gate.h); `allowed` holds the
  // same findings that a flag accepted, said but not failing.
  std::vector<std::string> refused, allowed;
  // Said and never failing: a plugin variant whose library changed between the reports (the
  // change a user gates is usually that library, so it is named, not refused).
  std::vector<std::string> notes;
  int exit_code() const;         // 0 clean, 5 refused (first), 1 regression or verification failure
};

// Whether `variant` is selected by the include and exclude globs.
bool compare_selects(const std::string& variant, const CompareOptions& opt);

CompareResult compare_reports(const RunReport& base, const RunReport& next, const CompareOptions& opt);
// Rows worst first, fitted to `width` columns (a shared mode or device above the table, shape keys
// factored or labelled, notes folded).
std::string format_compare_table(const CompareResult& r, std::size_t width = 120);
std::string format_compare_markdown(const CompareResult& r);

}  // namespace gdn

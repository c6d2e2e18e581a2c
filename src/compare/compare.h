// Baseline gate: matches cases of two reports and classifies each (README "compare").
#pragma once

#include <string>
#include <vector>

#include "report/report.h"

namespace gdn {

enum class CompareStatus { faster, slower, same, noisy, missing, added, failed_verification };
std::string_view to_string(CompareStatus);  // "faster", ..., "new" for added, "failed-verification"

struct CompareRow {
  std::string op, variant, shape_key, mode, device;
  CompareStatus status = CompareStatus::same;
  double base_s = 0, new_s = 0;  // medians
  double change_pct = 0;         // (new - base) / base * 100
  double threshold_pct = 0;      // the threshold applied to this row
  double noise_pct = 0;          // combined noise of the two medians, percent
  std::string note;
};

struct CompareOptions {
  double threshold_pct = 5.0;  // default; a case's threshold_pct in NEW's records overrides
  // Only variants matching one of `variants` (all when empty) and none of `exclude`; globs as in
  // `run --variant` (a glob without '/' also matches the part after "<op>/"). A GPU baseline
  // compared across GPU hosts gates CPU rows on a different CPU each time: `exclude = {"cpu"}`.
  std::vector<std::string> variants, exclude;
};

struct CompareResult {
  std::vector<CompareRow> rows;
  bool regression = false;       // any slower row
  bool verify_failure = false;   // any failed-verification row
  int exit_code() const;         // 0 clean, 1 regression or verification failure
};

CompareResult compare_reports(const RunReport& base, const RunReport& next, const CompareOptions& opt);
// Rows worst first, fitted to `width` columns (a shared mode or device above the table, shape keys
// factored or labelled, notes folded).
std::string format_compare_table(const CompareResult& r, std::size_t width = 120);
std::string format_compare_markdown(const CompareResult& r);

}  // namespace gdn

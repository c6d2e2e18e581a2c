// Whether one case changed between two reports (docs/ci.md "The noise rule"). With enough
// repetitions on both sides, a Mann-Whitney U test over the repetitions' medians (the noise
// between runs); otherwise the fastest repetition of each side and its measured noise (the noise
// inside one run). Either way a change must also exceed the threshold, the smallest effect that
// counts.
#pragma once

#include <string>

#include "report/record.h"

namespace gdn {

enum class CompareStatus { faster, slower, same, noisy, missing, added, failed_verification };

struct ChangeRule {
  double threshold_pct = 5.0;  // the smallest change that counts, percent
  int min_repetitions = 5;     // U test when both sides have at least this many repetitions
  double alpha = 0.05;         // its two-sided significance level
};

// Both N >= 5: a 5-vs-5 U test reaches p = 0.008 when every repetition of one side is slower than
// every one of the other, and p < 0.05 with at most two of the 25 pairs the other way round.
constexpr int kUTestMinRepetitions = 5;
constexpr double kUTestAlpha = 0.05;

struct ChangeVerdict {
  CompareStatus status = CompareStatus::same;
  double base_s = kNaN, new_s = kNaN;  // the times compared
  double change_pct = 0;               // (new - base) / base * 100
  double noise_pct = kNaN;             // noise rule: two standard errors of the difference; U test: NaN
  double p_value = kNaN;               // U test only
  std::string note;
};

// `base` and `next` both hold a finite, positive time.
ChangeVerdict judge_change(const CaseRecord& base, const CaseRecord& next, const ChangeRule& rule);

}  // namespace gdn

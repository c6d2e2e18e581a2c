// The Mann-Whitney U test (Wilcoxon rank-sum), two-sided: are two sets of repetition medians
// drawn from the same distribution? Google Benchmark's compare.py gates repetitions with it.
#pragma once

#include <vector>

namespace gdn {

struct UTest {
  double u = 0;       // U of the first sample: pairs (a, b) with a > b, ties counting one half
  double p = 1;       // two-sided p-value
  bool exact = true;  // exact distribution (no ties, n1 + n2 <= kMaxExactValues); else normal
};

// Exact up to this many values in all (the counts, at most C(50, 25) ~ 1.3e14, stay whole in a
// double), the normal approximation beyond and wherever values tie.
constexpr int kMaxExactValues = 50;

// p = 1 when either sample is empty.
UTest mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace gdn

// Sample statistics. All inputs and outputs in seconds (or any one unit).
#pragma once

#include <cstddef>
#include <vector>

namespace gdn {

struct Stats {
  std::size_t n = 0;
  double min = 0, p10 = 0, p25 = 0, median = 0, mean = 0, p75 = 0, p90 = 0, max = 0;
  double stdev = 0;      // unbiased (n - 1)
  double rel_stdev = 0;  // stdev / mean
  // Relative noise of the median: its standard error over the median. The standard error is
  // estimated robustly as 1.2533 * sigma / sqrt(n) with sigma = IQR / 1.349 (the normal-theory
  // standard error of a median, with a spread that ignores outliers). Infinity for n < 5.
  double noise = 0;
};

// Geometric mean of positive values (ratios); NaN for none.
double geomean(const std::vector<double>& v);

// Linear-interpolated quantile (q in [0, 1]) of sorted data.
double quantile_sorted(const std::vector<double>& sorted, double q);
Stats compute_stats(std::vector<double> samples);

}  // namespace gdn

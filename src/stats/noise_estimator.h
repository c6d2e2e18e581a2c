// The constants of Stats::noise (stats/stats.cpp), for the plan JSON: a peer harness that stops
// sampling by gdnbench's rule estimates the noise of the median with these very numbers.
#pragma once

#include <cstddef>

namespace gdn {

struct NoiseEstimator {
  std::size_t min_samples;  // below this many samples the noise is infinite
  double median_se_factor;  // standard error of a median = factor * sigma / sqrt(n)
  double iqr_per_sigma;     // sigma = IQR / this
};

NoiseEstimator noise_estimator();

}  // namespace gdn

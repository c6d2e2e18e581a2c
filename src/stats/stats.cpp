#include "stats/stats.h"
#include "stats/noise_estimator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace gdn {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Below this many samples a quartile-based spread means nothing (nvbench's stdrel waits for 5 too).
constexpr std::size_t kMinSamplesForNoise = 5;

// Standard error of a median from normal theory: sqrt(pi / 2) * sigma / sqrt(n).
constexpr double kMedianSeFactor = 1.2533;
// IQR of a normal distribution in units of sigma.
constexpr double kIqrPerSigma = 1.349;

}  // namespace

NoiseEstimator noise_estimator() { return {kMinSamplesForNoise, kMedianSeFactor, kIqrPerSigma}; }

double geomean(const std::vector<double>& v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / double(v.size()));
}

double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return kNaN;
  q = std::clamp(q, 0.0, 1.0);
  // Type 7 (R's default, numpy's "linear"): position q (n - 1) between neighbours.
  const double pos = q * double(sorted.size() - 1);
  const std::size_t lo = std::size_t(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - double(lo);
  return sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

Stats compute_stats(std::vector<double> samples) {
  Stats s;
  s.n = samples.size();
  if (samples.empty()) {
    s.min = s.p10 = s.p25 = s.median = s.mean = s.p75 = s.p90 = s.max = kNaN;
    s.stdev = s.rel_stdev = kNaN;
    s.noise = kInf;
    return s;
  }
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  s.p10 = quantile_sorted(samples, 0.10);
  s.p25 = quantile_sorted(samples, 0.25);
  s.median = quantile_sorted(samples, 0.50);
  s.p75 = quantile_sorted(samples, 0.75);
  s.p90 = quantile_sorted(samples, 0.90);

  const double n = double(s.n);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / n;
  if (s.n >= 2) {
    double ss = 0;
    for (double x : samples) ss += (x - s.mean) * (x - s.mean);
    s.stdev = std::sqrt(ss / (n - 1));
    s.rel_stdev = s.mean != 0 ? s.stdev / s.mean : kNaN;
  } else {
    s.stdev = s.rel_stdev = kNaN;  // one sample has no spread estimate
  }

  if (s.n < kMinSamplesForNoise) {
    s.noise = kInf;
  } else {
    const double sigma = (s.p75 - s.p25) / kIqrPerSigma;
    const double se = kMedianSeFactor * sigma / std::sqrt(n);
    if (s.median > 0) s.noise = se / s.median;
    else s.noise = se == 0 ? 0.0 : kInf;
  }
  return s;
}

}  // namespace gdn

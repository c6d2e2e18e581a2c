#include "timing/repetitions.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gdn {
namespace {

RepetitionStat summary(const Measurement& m) {
  RepetitionStat r;
  r.median_s = m.stats.median;
  r.noise = m.stats.noise;
  r.n = m.stats.n;
  r.converged = m.converged;
  return r;
}

}  // namespace

std::size_t repetition_count(const Measurement& m) { return m.repetitions.empty() ? 1 : m.repetitions.size(); }

std::vector<RepetitionStat> repetition_stats(const Measurement& m) {
  if (!m.repetitions.empty()) return m.repetitions;
  return {summary(m)};
}

double repetition_spread(const Measurement& m) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  int n = 0;
  for (const auto& rep : m.repetitions)
    if (std::isfinite(rep.median_s) && rep.median_s > 0) lo = std::min(lo, rep.median_s), hi = std::max(hi, rep.median_s), ++n;
  return n >= 2 ? (hi - lo) / lo : std::numeric_limits<double>::quiet_NaN();
}

void add_repetition(Measurement& total, const Measurement& next) {
  if (total.repetitions.empty()) total.repetitions.push_back(summary(total));
  total.repetitions.push_back(summary(next));
  total.samples_s.insert(total.samples_s.end(), next.samples_s.begin(), next.samples_s.end());
  total.stats = compute_stats(total.samples_s);
  if (total.converged && !next.converged) total.stop_reason = next.stop_reason;
  total.converged = total.converged && next.converged;
  total.wall_s += next.wall_s;
}

}  // namespace gdn

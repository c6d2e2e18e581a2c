#include "timing/repetitions.h"

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

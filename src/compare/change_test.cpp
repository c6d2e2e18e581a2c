#include "compare/change_test.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "stats/mann_whitney.h"
#include "stats/stats.h"
#include "timing/repetitions.h"

namespace gdn {
namespace {

std::vector<double> medians(const CaseRecord& r) {
  std::vector<double> out;
  for (const auto& rep : repetition_stats(r.timing))
    if (std::isfinite(rep.median_s) && rep.median_s > 0) out.push_back(rep.median_s);
  return out;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, 0.5);
}

// The fastest repetition: a busy spell of the host only ever slows a repetition down, so the
// fastest is the one it disturbed least. Noise in percent; unknown (n < 5, or null after a JSON
// round trip) counts as infinite.
struct Best {
  double median_s = kNaN;
  double noise_pct = std::numeric_limits<double>::infinity();
};

Best fastest(const CaseRecord& r) {
  Best b;
  for (const auto& rep : repetition_stats(r.timing)) {
    if (!std::isfinite(rep.median_s) || rep.median_s <= 0 || rep.median_s >= b.median_s) continue;
    b.median_s = rep.median_s;
    b.noise_pct = std::isfinite(rep.noise) ? rep.noise * 100.0 : std::numeric_limits<double>::infinity();
  }
  if (!std::isfinite(b.median_s)) b.median_s = r.timing.stats.median;  // no usable repetition summary
  return b;
}

ChangeVerdict u_test(const std::vector<double>& base, const std::vector<double>& next, const ChangeRule& rule) {
  ChangeVerdict v;
  v.base_s = median_of(base);
  v.new_s = median_of(next);
  v.change_pct = (v.new_s - v.base_s) / v.base_s * 100.0;
  const UTest t = mann_whitney_u(next, base);
  v.p_value = t.p;
  const bool beyond = std::fabs(v.change_pct) > rule.threshold_pct;
  const std::string test = fmt::format("U test p={:.3f}, {} vs {} repetitions", t.p, base.size(), next.size());
  if (beyond && t.p < rule.alpha) {
    v.status = v.change_pct > 0 ? CompareStatus::slower : CompareStatus::faster;
    v.note = test;
  } else if (beyond) {
    v.status = CompareStatus::noisy;
    v.note = fmt::format("{} (not below {})", test, rule.alpha);
  } else {
    v.status = CompareStatus::same;
    v.note = test;
  }
  return v;
}

ChangeVerdict noise_rule(const CaseRecord& base, const CaseRecord& next, const ChangeRule& rule) {
  ChangeVerdict v;
  const Best b = fastest(base), n = fastest(next);
  v.base_s = b.median_s;
  v.new_s = n.median_s;
  v.change_pct = (v.new_s - v.base_s) / v.base_s * 100.0;
  const double nb = b.noise_pct, nn = n.noise_pct, threshold = rule.threshold_pct;
  // Two standard errors of the difference of two independent medians.
  v.noise_pct = 2.0 * std::sqrt(nb * nb + nn * nn);
  const bool clear = std::fabs(v.change_pct) > threshold && std::fabs(v.change_pct) > v.noise_pct;
  const bool noisy_side = nb > threshold / 2 || nn > threshold / 2 || !base.timing.converged || !next.timing.converged;
  std::vector<std::string> why;
  const std::size_t reps_b = repetition_count(base.timing), reps_n = repetition_count(next.timing);
  if (reps_b > 1 || reps_n > 1) why.push_back(fmt::format("fastest of {} vs {} repetitions", reps_b, reps_n));
  if (clear) {
    v.status = v.change_pct > 0 ? CompareStatus::slower : CompareStatus::faster;
  } else if (noisy_side) {
    v.status = CompareStatus::noisy;
    if (nb > threshold / 2) why.push_back(std::isinf(nb) ? "base noise unknown" : fmt::format("base noise {:.2f}%", nb));
    if (nn > threshold / 2) why.push_back(std::isinf(nn) ? "new noise unknown" : fmt::format("new noise {:.2f}%", nn));
    if (!base.timing.converged) why.push_back("base stopped by " + base.timing.stop_reason);
    if (!next.timing.converged) why.push_back("new stopped by " + next.timing.stop_reason);
  } else {
    v.status = CompareStatus::same;
  }
  v.note = fmt::format("{}", fmt::join(why, ", "));
  return v;
}

}  // namespace

ChangeVerdict judge_change(const CaseRecord& base, const CaseRecord& next, const ChangeRule& rule) {
  const auto a = medians(base), b = medians(next);
  const std::size_t need = std::size_t(std::max(rule.min_repetitions, 1));
  if (a.size() >= need && b.size() >= need && repetition_count(base.timing) >= need &&
      repetition_count(next.timing) >= need)
    return u_test(a, b, rule);
  return noise_rule(base, next, rule);
}

}  // namespace gdn

#include "stats/mann_whitney.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace gdn {
namespace {

// Number of orderings of n1 a's and n2 b's with U = u, for u = 0 .. n1 * n2:
// count(n1, n2, u) = count(n1 - 1, n2, u - n2) + count(n1, n2 - 1, u), as the largest value is an
// a (beating all n2 b's) or a b.
std::vector<double> u_counts(int n1, int n2) {
  // table[j][u] for the current i: orderings of i a's and j b's.
  const int max_u = n1 * n2;
  std::vector<std::vector<double>> prev(std::size_t(n2 + 1), std::vector<double>(std::size_t(max_u + 1), 0.0));
  for (int j = 0; j <= n2; ++j) prev[std::size_t(j)][0] = 1;  // no a's: one ordering, U = 0
  for (int i = 1; i <= n1; ++i) {
    std::vector<std::vector<double>> cur(std::size_t(n2 + 1), std::vector<double>(std::size_t(max_u + 1), 0.0));
    cur[0][0] = 1;  // no b's: U = 0
    for (int j = 1; j <= n2; ++j)
      for (int u = 0; u <= i * j; ++u) {
        double c = cur[std::size_t(j - 1)][std::size_t(u)];
        if (u >= j) c += prev[std::size_t(j)][std::size_t(u - j)];
        cur[std::size_t(j)][std::size_t(u)] = c;
      }
    prev = std::move(cur);
  }
  return prev[std::size_t(n2)];
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

}  // namespace

UTest mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  UTest t;
  const std::size_t n1 = a.size(), n2 = b.size();
  if (n1 == 0 || n2 == 0) return t;

  // Mid-ranks over the pooled values; tie groups feed the variance correction.
  std::vector<std::pair<double, int>> all;
  for (double v : a) all.push_back({v, 0});
  for (double v : b) all.push_back({v, 1});
  std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  const double n = double(n1 + n2);
  double rank_sum_a = 0, tie_term = 0;
  bool ties = false;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    const double mid = (double(i + 1) + double(j)) / 2.0, group = double(j - i);
    for (std::size_t k = i; k < j; ++k)
      if (all[k].second == 0) rank_sum_a += mid;
    if (group > 1) ties = true, tie_term += group * group * group - group;
    i = j;
  }
  t.u = rank_sum_a - double(n1) * double(n1 + 1) / 2.0;
  const double pairs = double(n1) * double(n2);

  if (!ties && n1 + n2 <= std::size_t(kMaxExactValues)) {
    const auto counts = u_counts(int(n1), int(n2));
    const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    const int u = int(std::lround(t.u));
    double lower = 0, upper = 0;  // P(U <= u), P(U >= u)
    for (int k = 0; k <= int(pairs); ++k) {
      if (k <= u) lower += counts[std::size_t(k)];
      if (k >= u) upper += counts[std::size_t(k)];
    }
    t.p = std::min(1.0, 2.0 * std::min(lower, upper) / total);
    t.exact = true;
    return t;
  }
  // Normal approximation with the tie correction and a continuity correction of one half.
  t.exact = false;
  const double mean = pairs / 2.0;
  const double var = pairs / 12.0 * ((n + 1) - tie_term / (n * (n - 1)));
  if (var <= 0) return t;  // every value equal: no evidence of a difference
  const double z = (std::fabs(t.u - mean) - 0.5) / std::sqrt(var);
  t.p = std::min(1.0, 2.0 * (1.0 - normal_cdf(std::max(z, 0.0))));
  return t;
}

}  // namespace gdn

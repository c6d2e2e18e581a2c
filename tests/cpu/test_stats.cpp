#include <gtest/gtest.h>

#include <cmath>

#include "stats/stats.h"

namespace gdn {
namespace {

TEST(Quantile, LinearInterpolationBetweenNeighbours) {
  const std::vector<double> v{1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 1.0), 4.0);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.5), 2.5);    // position 1.5
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.25), 1.75);  // position 0.75
  EXPECT_DOUBLE_EQ(quantile_sorted({10, 20}, 0.1), 11.0);
  EXPECT_DOUBLE_EQ(quantile_sorted({7}, 0.9), 7.0);
  EXPECT_TRUE(std::isnan(quantile_sorted({}, 0.5)));
}

TEST(Stats, HandWorkedOneToTen) {
  // Shuffled 1..10. Mean 5.5; sum of squared deviations 82.5, unbiased stdev sqrt(82.5 / 9).
  // p25 at position 2.25 -> 3.25, p75 at 6.75 -> 7.75, IQR 4.5;
  // noise = 1.2533 * (4.5 / 1.349) / sqrt(10) / 5.5 = 0.240377...
  const Stats s = compute_stats({7, 3, 10, 1, 5, 9, 2, 8, 6, 4});
  EXPECT_EQ(s.n, 10u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.p10, 1.9);  // position 0.9
  EXPECT_DOUBLE_EQ(s.p25, 3.25);
  EXPECT_DOUBLE_EQ(s.p75, 7.75);
  EXPECT_DOUBLE_EQ(s.p90, 9.1);  // position 8.1
  EXPECT_NEAR(s.stdev, 3.0276503540974917, 1e-12);
  EXPECT_NEAR(s.rel_stdev, 3.0276503540974917 / 5.5, 1e-12);
  EXPECT_NEAR(s.noise, 0.24037700197723078, 1e-12);
}

TEST(Stats, NoiseIgnoresOneOutlier) {
  // 20 samples of 100 and one of 10^6: the quartiles (and so the noise) do not move.
  std::vector<double> v(20, 100.0);
  v.push_back(1e6);
  const Stats s = compute_stats(v);
  EXPECT_DOUBLE_EQ(s.median, 100.0);
  EXPECT_DOUBLE_EQ(s.noise, 0.0);
  EXPECT_GT(s.rel_stdev, 1.0);  // the mean-based spread does
}

TEST(Stats, NoiseInfiniteBelowFiveSamples) {
  EXPECT_TRUE(std::isinf(compute_stats({1, 1, 1, 1}).noise));
  EXPECT_FALSE(std::isinf(compute_stats({1, 1, 1, 1, 1}).noise));
  EXPECT_DOUBLE_EQ(compute_stats({1, 1, 1, 1, 1}).noise, 0.0);
}

TEST(Stats, DegenerateInputs) {
  const Stats one = compute_stats({2.5});
  EXPECT_EQ(one.n, 1u);
  EXPECT_DOUBLE_EQ(one.median, 2.5);
  EXPECT_DOUBLE_EQ(one.p90, 2.5);
  EXPECT_TRUE(std::isnan(one.stdev));  // no spread from one sample
  EXPECT_TRUE(std::isinf(one.noise));

  const Stats none = compute_stats({});
  EXPECT_EQ(none.n, 0u);
  EXPECT_TRUE(std::isnan(none.median));
  EXPECT_TRUE(std::isinf(none.noise));
}

}  // namespace
}  // namespace gdn

// The U test against its exact distribution, counted by enumerating every ordering.
#include <gtest/gtest.h>

#include <cmath>

#include "stats/mann_whitney.h"

namespace gdn {
namespace {

TEST(MannWhitney, CompleteSeparationOfFiveAgainstFive) {
  // Every a below every b: U = 0, and 2 of the C(10, 5) = 252 orderings are this extreme.
  const auto t = mann_whitney_u({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  EXPECT_TRUE(t.exact);
  EXPECT_DOUBLE_EQ(t.u, 0.0);
  EXPECT_NEAR(t.p, 2.0 / 252.0, 1e-12);
  // The other way round: U = 25, the same p.
  const auto r = mann_whitney_u({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(r.u, 25.0);
  EXPECT_NEAR(r.p, 2.0 / 252.0, 1e-12);
}

TEST(MannWhitney, InterleavedSamplesAreNotSignificant) {
  // U = 10; P(U <= 10) = 87 / 252 for five against five.
  const auto t = mann_whitney_u({1, 3, 5, 7, 9}, {2, 4, 6, 8, 10});
  EXPECT_DOUBLE_EQ(t.u, 10.0);
  EXPECT_NEAR(t.p, 2.0 * 87.0 / 252.0, 1e-12);
}

TEST(MannWhitney, TheFiveAgainstFiveBoundary) {
  // Two pairs out of order: U = 2, p = 2 * 4 / 252 = 0.032 < 0.05; three: U = 3, p = 0.056.
  const auto two = mann_whitney_u({1, 2, 3, 4, 6}, {5, 5.5, 7, 8, 9});
  EXPECT_DOUBLE_EQ(two.u, 2.0);
  EXPECT_NEAR(two.p, 8.0 / 252.0, 1e-12);
  const auto three = mann_whitney_u({1, 2, 3, 4, 7.5}, {5, 6, 7, 8, 9});
  EXPECT_DOUBLE_EQ(three.u, 3.0);
  EXPECT_NEAR(three.p, 14.0 / 252.0, 1e-12);
  EXPECT_GT(three.p, 0.05);
}

TEST(MannWhitney, ThreeAgainstThreeCanNeverBeSignificant) {
  // 2 / C(6, 3) = 0.1: why the gate asks for five repetitions on each side.
  EXPECT_NEAR(mann_whitney_u({1, 2, 3}, {4, 5, 6}).p, 0.1, 1e-12);
}

TEST(MannWhitney, TiesUseTheNormalApproximation) {
  const auto t = mann_whitney_u({1, 2, 2, 3}, {2, 4, 5, 6});
  EXPECT_FALSE(t.exact);
  EXPECT_DOUBLE_EQ(t.u, 2.0);  // 1 beats nothing; each 2 ties b's 2 (a half each); 3 beats 2
  EXPECT_GT(t.p, 0.0);
  EXPECT_LT(t.p, 1.0);
  // Every value equal: no evidence of a difference at all.
  EXPECT_DOUBLE_EQ(mann_whitney_u({4, 4, 4}, {4, 4, 4}).p, 1.0);
}

TEST(MannWhitney, LargeSamplesAgreeWithTheNormalApproximation) {
  // 30 against 30, shifted by a third of the range: past the exact limit; the normal
  // approximation matches the exact value of a 25-against-25 sample closely.
  std::vector<double> a, b;
  for (int i = 0; i < 30; ++i) a.push_back(i), b.push_back(i + 10.5);
  const auto t = mann_whitney_u(a, b);
  EXPECT_FALSE(t.exact);
  EXPECT_LT(t.p, 0.01);
  std::vector<double> c(a.begin(), a.begin() + 25), d(b.begin(), b.begin() + 25);
  const auto exact = mann_whitney_u(c, d);
  EXPECT_TRUE(exact.exact);
  EXPECT_GT(exact.p, 0.0);
  EXPECT_LT(exact.p, 0.05);
}

TEST(MannWhitney, EmptySampleHasNoEvidence) {
  EXPECT_DOUBLE_EQ(mann_whitney_u({}, {1, 2}).p, 1.0);
  EXPECT_DOUBLE_EQ(mann_whitney_u({1}, {}).p, 1.0);
}

}  // namespace
}  // namespace gdn

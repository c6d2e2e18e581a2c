// Kernel records -> samples (CUPTI timer attribution), on synthetic records: no GPU needed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/errors.h"
#include "timing/kernel_attribution.h"

namespace gdn {
namespace {

const std::string kFlush = "l2_flush_kernel";
const std::string kStamp = "sm_clock_stamp_kernel";
const std::string kMain = "variant_main";
const std::string kTail = "variant_tail";

KernelRecord rec(uint64_t start, uint64_t end, const std::string& name) {
  KernelRecord r;
  r.start_ns = start;
  r.end_ns = end;
  r.name = &name;
  return r;
}

TEST(KernelAttribution, WorkBeforeAndAfterTheWindowIsLeftOut) {
  // Per sample: flush and stamp before t0, the variant inside, a stamp after t1.
  const std::vector<SampleWindow> windows = {{1000, 2000}, {3000, 4000}};
  const std::vector<KernelRecord> records = {
      rec(100, 900, kFlush),   rec(950, 960, kStamp),   rec(1100, 1500, kMain), rec(2100, 2110, kStamp),
      rec(2200, 2900, kFlush), rec(2950, 2960, kStamp), rec(3100, 3600, kMain), rec(4100, 4110, kStamp),
  };
  const auto groups = group_by_window(records, windows);
  ASSERT_EQ(groups.size(), 2u);
  ASSERT_EQ(groups[0], std::vector<std::size_t>({2}));
  ASSERT_EQ(groups[1], std::vector<std::size_t>({6}));
  EXPECT_TRUE(groups_look_complete(groups));
  const auto samples = samples_from_groups(records, groups);
  ASSERT_EQ(samples.size(), 2u);
  for (const auto& s : samples) {
    ASSERT_EQ(s.kernels.size(), 1u);
    EXPECT_EQ(s.kernels[0].name, kMain);
  }
  EXPECT_DOUBLE_EQ(samples[0].seconds, 400e-9);
  EXPECT_DOUBLE_EQ(samples[1].seconds, 500e-9);
}

TEST(KernelAttribution, CorrelationIdsWinOverSkewedTimestamps) {
  // Seen on an H200: GPU timestamps mapped to the host clock run a few microseconds late, so the
  // clock stamp launched before the window appears inside it. Correlation ids are exact.
  auto with_id = [](KernelRecord r, uint32_t id) {
    r.correlation_id = id;
    return r;
  };
  std::vector<SampleWindow> windows = {{1000, 2000}, {3000, 4000}};
  // Runtime API calls (host timestamps): the stamp launches fall outside the windows, the
  // variant's launches (and the closing synchronise) inside.
  assign_correlation_ranges(windows, {{990, 10}, {1001, 12}, {1002, 13}, {1990, 14}, {2995, 20}, {3002, 22},
                                      {3995, 23}, {4005, 24}});
  EXPECT_EQ(windows[0].corr_after, 11u);
  EXPECT_EQ(windows[0].corr_last, 14u);
  EXPECT_EQ(windows[1].corr_after, 21u);
  EXPECT_EQ(windows[1].corr_last, 23u);
  const std::vector<KernelRecord> records = {
      with_id(rec(1005, 1010, kStamp), 10),  // launched before the window, recorded inside it
      with_id(rec(1020, 1500, kMain), 12),   with_id(rec(1500, 1700, kTail), 13),
      with_id(rec(2990, 3010, kStamp), 20),  with_id(rec(3020, 3600, kMain), 22),
      with_id(rec(3990, 3999, kStamp), 24),  // launched after the sample, recorded inside it
  };
  const auto groups = group_by_window(records, windows);
  ASSERT_EQ(groups[0], std::vector<std::size_t>({1, 2}));
  ASSERT_EQ(groups[1], std::vector<std::size_t>({4}));
  const auto samples = samples_from_groups(records, groups);
  EXPECT_NEAR(samples[0].seconds, 680e-9, 1e-15);
  EXPECT_NEAR(samples[1].seconds, 580e-9, 1e-15);

  // Without ids for every window, the time window decides (and the skewed stamp is counted).
  windows[1].corr_last = 0;
  EXPECT_EQ(group_by_window(records, windows)[0], std::vector<std::size_t>({0, 1, 2}));
}

TEST(KernelAttribution, MultiKernelSampleSpansFirstStartToLastEnd) {
  const std::vector<SampleWindow> windows = {{0 + 10, 10000}};
  // Delivered out of order on purpose; a gap of 1000 ns between the kernels counts in the span.
  const std::vector<KernelRecord> records = {rec(3000, 5000, kTail), rec(100, 2000, kMain)};
  const auto groups = group_by_window(records, windows);
  const auto samples = samples_from_groups(records, groups);
  ASSERT_EQ(samples[0].kernels.size(), 2u);
  EXPECT_EQ(samples[0].kernels[0].name, kMain);  // start order
  EXPECT_EQ(samples[0].kernels[1].name, kTail);
  EXPECT_DOUBLE_EQ(samples[0].kernels[0].seconds, 1900e-9);
  EXPECT_DOUBLE_EQ(samples[0].kernels[1].seconds, 2000e-9);
  EXPECT_DOUBLE_EQ(samples[0].seconds, 4900e-9);
}

TEST(KernelAttribution, WindowBoundsAreInclusive) {
  const std::vector<SampleWindow> windows = {{1000, 2000}};
  const std::vector<KernelRecord> records = {rec(1000, 1500, kMain), rec(2000, 2500, kTail), rec(999, 1200, kFlush),
                                             rec(2001, 2300, kStamp)};
  const auto groups = group_by_window(records, windows);
  EXPECT_EQ(groups[0], std::vector<std::size_t>({0, 1}));
}

TEST(KernelAttribution, EmptySampleIsAnErrorNamingTheSample) {
  const std::vector<SampleWindow> windows = {{1000, 2000}, {3000, 4000}};
  const std::vector<KernelRecord> records = {rec(1100, 1200, kMain), rec(2500, 2600, kFlush)};
  const auto groups = group_by_window(records, windows);
  EXPECT_FALSE(groups_look_complete(groups));
  try {
    samples_from_groups(records, groups);
    FAIL() << "expected an error for a sample without kernels";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitRuntime);
    EXPECT_NE(std::string(e.what()).find("sample 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no kernel"), std::string::npos) << e.what();
  }
}

TEST(KernelAttribution, IncompleteRecordIsAnError) {
  const std::vector<SampleWindow> windows = {{1000, 2000}};
  const std::vector<KernelRecord> records = {rec(1100, 0, kMain)};  // end never filled in
  const auto groups = group_by_window(records, windows);
  EXPECT_THROW(samples_from_groups(records, groups), Error);
}

TEST(KernelAttribution, UnequalKernelCountsLookIncomplete) {
  EXPECT_TRUE(groups_look_complete({{0, 1}, {2, 3}}));
  EXPECT_FALSE(groups_look_complete({{0, 1}, {2}}));
  EXPECT_FALSE(groups_look_complete({{}, {}}));
  EXPECT_TRUE(groups_look_complete({}));
}

TEST(KernelAttribution, DemanglesCxxNamesAndKeepsOthers) {
  EXPECT_EQ(demangle_kernel_name("_Z3fooi"), "foo(int)");
  EXPECT_EQ(demangle_kernel_name("_ZN3gdn12flush_kernelEPfm"), "gdn::flush_kernel(float*, unsigned long)");
  EXPECT_EQ(demangle_kernel_name("plain_c_kernel"), "plain_c_kernel");
  EXPECT_EQ(demangle_kernel_name(nullptr), "<unnamed kernel>");
}

}  // namespace
}  // namespace gdn

// prefill/sm90's kernels as ptxas compiled them, checked without a GPU (resource-usage/prefill_sm90.txt
// of the build tree): none spills, and none has its wgmma instructions serialized (ptxas C7512,
// "insufficient register resources"; C7518, a wait the compiler put in a divergent path). Both are silent in a normal build and cost far more than
// they look: a serialized kernel runs its products one at a time, and the state warpgroups'
// setmaxnreg budgets (192 in the fused kernel) leave little room (kernels/prefill/sm90/README.md).
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "cpu/ptxas_report.h"

namespace gdn {
namespace {

const std::string kReport = std::string(GDN_RESOURCE_USAGE_DIR) + "/prefill_sm90.txt";

TEST(Sm90Resources, NoKernelSpillsOrSerializesItsWgmma) {
  const auto uses = test::read_report(kReport);
  ASSERT_FALSE(uses.empty()) << "no kernels in " << kReport << " (prefill_sm90 is built with RESOURCE_USAGE)";
  std::set<std::string> kernels;
  for (const auto& u : uses) {
    kernels.insert(test::split_template(u.name).first);
    ASSERT_GE(u.spill_stores, 0) << u.name << ": no spill line in the report";
    EXPECT_EQ(u.spill_stores + u.spill_loads, 0)
        << u.name << " on " << u.arch << " spills " << u.spill_stores << " + " << u.spill_loads << " bytes";
    EXPECT_FALSE(u.wgmma_serialized) << u.name << ": ptxas serialized its wgmma (C7510-C7518)";
  }
  // The planned kernels were all found, so the checks above were not vacuous.
  for (const char* k : {"prefill_sm90_scan_kernel", "prefill_sm90_prep_kernel", "prefill_sm90_fixup_kernel", "prefill_sm90_fused_kernel"})
    EXPECT_TRUE(kernels.count(k)) << k << " is not in " << kReport;
}

// Checkpoints (docs/method.md 2.4) are kernels of their own (kCkpt), so the scan and the fused kernel
// without them keep their code: both twins are built, and the checks above cover both. The 8-bit
// pool scans (Q, pool_8bit.cuh) are kernels of their own too, each with the checkpoint cursor.
TEST(Sm90Resources, CheckpointKernelsAreTwinsOfThePlainOnes) {
  int plain = 0, with = 0, q8 = 0;
  for (const auto& u : test::read_report(kReport)) {
    const auto [name, args] = test::split_template(u.name);
    if (name != "prefill_sm90_scan_kernel" && name != "prefill_sm90_fused_kernel") continue;
    const bool scan = name == "prefill_sm90_scan_kernel";
    // scan<In, BV, kOut, kCkpt, Q>, fused<In, kCkpt>: Q is a format or void.
    if (scan && args.size() == 5u && args.back().find("Format") != std::string::npos) {
      EXPECT_NE(args[3].find("true"), std::string::npos) << u.name;
      ++q8;
      continue;
    }
    const bool checkpoints = args.size() >= (scan ? 4u : 2u) && args[scan ? 3 : 1].find("true") != std::string::npos;
    ++(checkpoints ? with : plain);
  }
  EXPECT_EQ(with, 8) << "scan at block_v 32, 64, 128 and fused, for bf16 and f16";
  EXPECT_EQ(plain, 12);
  EXPECT_EQ(q8, 12) << "scan at block_v 32, 64, 128 for fp8e4m3 and int8, bf16 and f16";
}

TEST(Sm90Resources, ReportParserMarksSerializedWgmma) {
  const std::string path = ::testing::TempDir() + "/prefill_report.txt";
  std::ofstream(path) << "ptxas info    : (C7512) Potential Performance Loss: wgmma.mma_async instructions are serialized "
                         "due to insufficient register resources for the function '_ZN3gdn4sm901kILi128EEEvv'\n"
                         "ptxas info    : Compiling entry function '_ZN3gdn4sm901kILi128EEEvv' for 'sm_90a'\n"
                         "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                         "ptxas info    : Used 168 registers\n"
                         "ptxas info    : Compiling entry function '_ZN3gdn4sm901kILi64EEEvv' for 'sm_90a'\n"
                         "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                         "ptxas info    : Used 236 registers\n"
                         "ptxas info    : (C7518) Potential Performance Loss: wgmma.mma_async instructions are serialized "
                         "due to program dependence on compiler-inserted WG.DP in divergent path in the function "
                         "'_ZN3gdn4sm901kILi32EEEvv'\n"
                         "ptxas info    : Compiling entry function '_ZN3gdn4sm901kILi32EEEvv' for 'sm_90a'\n"
                         "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                         "ptxas info    : Used 222 registers\n";
  const auto uses = test::read_report(path);
  ASSERT_EQ(uses.size(), 3u);
  EXPECT_TRUE(uses[2].wgmma_serialized) << "C7518: serialized by a wait the compiler put in a divergent path";
  EXPECT_EQ(uses[0].name, "void gdn::sm90::k<128>()");
  EXPECT_EQ(uses[0].arch, "sm_90");
  EXPECT_TRUE(uses[0].wgmma_serialized);
  EXPECT_FALSE(uses[1].wgmma_serialized);
  EXPECT_EQ(uses[1].registers, 236);
  // A plain function's name stops at its parameter list (whose types have colons of their own).
  EXPECT_EQ(test::split_template("gdn::sm90::prefill_sm90_fixup_kernel(gdn::prefill::Args, gdn::sm90::CpArgs)").first,
            "prefill_sm90_fixup_kernel");
}

}  // namespace
}  // namespace gdn

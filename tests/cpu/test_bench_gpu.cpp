// scripts/bench-gpu.sh without a GPU: its usage and refusals, and peers-warm, which cuts the
// prefill plan (the full table, or WARM=prefill-sample's 27 points) into WARM_JOBS contiguous
// slices per installed peer, one process each, every point in exactly one slice, each slice's exit
// status reported; a peer that is not installed gets none. Here the peer harness cannot import
// torch (or can and finds no GPU): the slices fail fast, which is what the suite must report.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "test_support.h"

namespace {

namespace fs = std::filesystem;

std::string run(const std::string& cmd) { return gdn::test::run_shell(cmd).out; }

// peers-warm with FLA alone "installed" (a package `fla` in PEER_SITE) and `env` set: its slices as [first, last] pairs, every
// point of a `points`-point plan in exactly one of `jobs` contiguous slices.
void expect_warm_slices(const std::string& env, int jobs, int points) {
  const fs::path tmp = fs::temp_directory_path() / ("gdn-warm-" + std::to_string(::getpid()));
  fs::create_directories(tmp / "site" / "fla");
  std::ofstream(tmp / "site" / "fla" / "__init__.py") << "\n";  // FLA "installed"; FlashQLA and FlashInfer not
  const std::string out = run("cd '" GDN_SOURCE_DIR "' && " + env + " GDNBENCH='" GDN_BINARY "' PEER_SITE='" +
                              (tmp / "site").string() + "' PEER_CACHE='" + (tmp / "cache").string() + "' OUT_DIR='" +
                              (tmp / "o").string() + "' GDN_PEER_REF_CACHE='" + (tmp / "refs").string() +
                              "' WARM_JOBS=" + std::to_string(jobs) + " timeout 120 bash scripts/bench-gpu.sh peers-warm 2>&1");
  fs::remove_all(tmp);
  EXPECT_NE(out.find("warm: flashqla not installed"), std::string::npos) << out;
  EXPECT_NE(out.find("warm: flashinfer not installed"), std::string::npos) << out;
  const int per = (points + jobs - 1) / jobs;
  const std::regex slice(R"(warm fla\[(\d+)\.\.(\d+)\]: exit (\d+) \()");
  std::vector<std::pair<int, int>> slices;
  for (std::sregex_iterator it(out.begin(), out.end(), slice), end; it != end; ++it)
    slices.emplace_back(std::stoi((*it)[1]), std::stoi((*it)[2]));
  ASSERT_EQ(int(slices.size()), (points + per - 1) / per) << out;
  int next = 0;
  for (const auto& [first, last] : slices) {
    EXPECT_EQ(first, next) << out;
    EXPECT_EQ(last - first + 1, next + per <= points ? per : points - next) << out;
    next = last + 1;
  }
  EXPECT_EQ(next, points) << "every point of the plan is in exactly one slice";
}

// 171 points in four slices: [0..42] [43..85] [86..128] [129..170].
TEST(BenchGpu, PeersWarmCutsThePlanIntoOneProcessPerSlice) { expect_warm_slices("", 4, 171); }

// WARM=prefill-sample: configs/qwen35-prefill-sample.yaml's 27 points, three slices of nine.
TEST(BenchGpu, PeersWarmTakesTheSampleSet) { expect_warm_slices("WARM=prefill-sample", 3, 27); }

TEST(BenchGpu, AnUnknownWarmSetIsRefused) {
  const std::string out = run("cd '" GDN_SOURCE_DIR "' && WARM=most bash scripts/bench-gpu.sh peers-warm 2>&1; echo \"exit $?\"");
  EXPECT_NE(out.find("WARM=most: prefill or prefill-sample"), std::string::npos) << out;
  EXPECT_NE(out.find("exit 3"), std::string::npos) << out;
}

TEST(BenchGpu, AnUnknownSuiteExitsThreeWithTheUsage) {
  const std::string out = run("cd '" GDN_SOURCE_DIR "' && bash scripts/bench-gpu.sh decode prefil 2>&1; echo \"exit $?\"");
  EXPECT_NE(out.find("unknown suite 'prefil'"), std::string::npos) << out;
  EXPECT_NE(out.find("usage: scripts/bench-gpu.sh SUITE..."), std::string::npos) << out;
  EXPECT_NE(out.find("exit 3"), std::string::npos) << out;
  EXPECT_EQ(out.find("=== decode"), std::string::npos) << "nothing runs before every suite is known\n" << out;
}

TEST(BenchGpu, NoSuiteExitsThree) {
  const std::string out = run("cd '" GDN_SOURCE_DIR "' && bash scripts/bench-gpu.sh 2>&1; echo \"exit $?\"");
  EXPECT_NE(out.find("usage: scripts/bench-gpu.sh SUITE..."), std::string::npos) << out;
  EXPECT_NE(out.find("exit 3"), std::string::npos) << out;
}

// --help names every suite the script accepts, and its environment.
TEST(BenchGpu, HelpListsEverySuite) {
  const std::string out = run("cd '" GDN_SOURCE_DIR "' && bash scripts/bench-gpu.sh --help 2>&1; echo \"exit $?\"");
  for (const char* suite : {"tests", "prefill-edge", "smoke", "decode", "mtp", "legacy", "prefill", "prefill-sample", "all",
                            "peers", "peers-warm", "peers-install"})
    EXPECT_TRUE(std::regex_search(out, std::regex(std::string("\n  ") + suite + " "))) << suite << "\n" << out;
  EXPECT_NE(out.find("GDNBENCH "), std::string::npos) << out;
  EXPECT_NE(out.find("exit 0"), std::string::npos) << out;
}

TEST(BenchGpu, AnUnknownModeIsRefused) {
  const std::string out = run("cd '" GDN_SOURCE_DIR "' && MODE=warm bash scripts/bench-gpu.sh decode 2>&1; echo \"exit $?\"");
  EXPECT_NE(out.find("MODE=warm: cold, hot or graph"), std::string::npos) << out;
  EXPECT_NE(out.find("exit 3"), std::string::npos) << out;
}

}  // namespace

// scripts/gpu-session.sh peers-warm: the prefill plan (the full table, or PREFILL_SET=sample's 27
// points) cut into WARM_JOBS contiguous slices per installed peer, one process each, every point in
// exactly one slice, each slice's exit status reported; a peer that is not installed gets none.
// Here the peer harness cannot import torch (or can and finds no GPU): the slices fail fast, which
// is what the step must report.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  pclose(p);
  return out;
}

// peers-warm with FLA alone "installed" and `env` set: its slices as [first, last] pairs, every
// point of a `points`-point plan in exactly one of `jobs` contiguous slices.
void expect_warm_slices(const std::string& env, int jobs, int points) {
  const fs::path tmp = fs::temp_directory_path() / ("gdn-warm-" + std::to_string(::getpid()));
  fs::create_directories(tmp / "site" / ".peers");
  std::ofstream(tmp / "site" / ".peers" / "fla") << "fla\n";  // FLA "installed"; FlashQLA and FlashInfer not
  const std::string bin = fs::path(GDN_BINARY).parent_path().string();
  const std::string out = run("cd '" GDN_SOURCE_DIR "' && " + env + " BIN='" + bin + "' PEER_SITE='" + (tmp / "site").string() +
                              "' PEER_OUT='" + (tmp / "out").string() + "' PEER_CACHE='" + (tmp / "cache").string() +
                              "' OUT_DIR='" + (tmp / "o").string() + "' WARM_JOBS=" + std::to_string(jobs) +
                              " timeout 120 bash scripts/gpu-session.sh peers-warm 2>&1");
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
TEST(GpuSession, PeersWarmCutsThePlanIntoOneProcessPerSlice) { expect_warm_slices("", 4, 171); }

// PREFILL_SET=sample: configs/qwen35-prefill-sample.yaml's 27 points, three slices of nine.
TEST(GpuSession, PeersWarmTakesTheSampleSet) { expect_warm_slices("PREFILL_SET=sample", 3, 27); }

TEST(GpuSession, AnUnknownPrefillSetIsRefused) {
  const std::string out = run("cd '" GDN_SOURCE_DIR "' && PREFILL_SET=most bash scripts/gpu-session.sh peers-warm 2>&1; echo \"exit $?\"");
  EXPECT_NE(out.find("PREFILL_SET=most: full or sample"), std::string::npos) << out;
  EXPECT_NE(out.find("exit 3"), std::string::npos) << out;
}

}  // namespace

// scripts/gpu-session.sh peers-warm: the prefill plan cut into WARM_JOBS contiguous slices per
// installed peer, one process each, every point in exactly one slice, each slice's exit status
// reported; a peer that is not installed gets none. Here the peer harness cannot import torch (or
// can and finds no GPU): the slices fail fast, which is what the step must report.
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

TEST(GpuSession, PeersWarmCutsThePlanIntoOneProcessPerSlice) {
  const fs::path tmp = fs::temp_directory_path() / ("gdn-warm-" + std::to_string(::getpid()));
  fs::create_directories(tmp / "site" / ".peers");
  std::ofstream(tmp / "site" / ".peers" / "fla") << "fla\n";  // FLA "installed"; FlashQLA and FlashInfer not
  const std::string bin = fs::path(GDN_BINARY).parent_path().string();
  const std::string out = run("cd '" GDN_SOURCE_DIR "' && BIN='" + bin + "' PEER_SITE='" + (tmp / "site").string() +
                              "' PEER_OUT='" + (tmp / "out").string() + "' PEER_CACHE='" + (tmp / "cache").string() +
                              "' OUT_DIR='" + (tmp / "o").string() + "' WARM_JOBS=4 timeout 120 bash scripts/gpu-session.sh peers-warm 2>&1");
  fs::remove_all(tmp);
  EXPECT_NE(out.find("warm: flashqla not installed"), std::string::npos) << out;
  EXPECT_NE(out.find("warm: flashinfer not installed"), std::string::npos) << out;
  // 171 points in four slices: [0..42] [43..85] [86..128] [129..170], each with its status.
  const std::regex slice(R"(warm fla\[(\d+)\.\.(\d+)\]: exit (\d+) \()");
  std::vector<std::pair<int, int>> slices;
  for (std::sregex_iterator it(out.begin(), out.end(), slice), end; it != end; ++it)
    slices.emplace_back(std::stoi((*it)[1]), std::stoi((*it)[2]));
  ASSERT_EQ(slices.size(), 4u) << out;
  int next = 0;
  for (const auto& [first, last] : slices) {
    EXPECT_EQ(first, next) << out;
    EXPECT_EQ(last - first + 1, next + 43 <= 171 ? 43 : 171 - next) << out;
    next = last + 1;
  }
  EXPECT_EQ(next, 171) << "every point of the plan is in exactly one slice";
}

}  // namespace

// The house rules of docs/ARCHITECTURE.md, read off the source tree: what may include what, that
// a family's device headers have one translation unit, and that kernels/common/ stays small.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace gdn {
namespace {

namespace fs = std::filesystem;
const fs::path kRoot = GDN_SOURCE_DIR;

struct Source {
  std::string path;  // relative to the repository root
  std::vector<std::string> includes;
  int lines = 0;
};

std::vector<Source> sources_under(const std::string& dir) {
  std::vector<Source> out;
  const std::regex include(R"re(^\s*#\s*include\s*"([^"]+)")re");
  for (const auto& e : fs::recursive_directory_iterator(kRoot / dir)) {
    if (!e.is_regular_file()) continue;
    const std::string ext = e.path().extension().string();
    if (ext != ".h" && ext != ".cuh" && ext != ".cpp" && ext != ".cu") continue;
    Source s{fs::relative(e.path(), kRoot).string(), {}, 0};
    std::ifstream in(e.path());
    std::smatch m;
    for (std::string line; std::getline(in, line); ++s.lines)
      if (std::regex_search(line, m, include)) s.includes.push_back(m[1]);
    out.push_back(std::move(s));
  }
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

TEST(House, CommonIncludesNoOpHeaderNorAFamily) {
  int lines = 0;
  for (const auto& f : sources_under("kernels/common")) {
    lines += f.lines;
    for (const auto& inc : f.includes)
      EXPECT_TRUE(starts_with(inc, "common/") || starts_with(inc, "core/")) << f.path << " includes " << inc;
  }
  EXPECT_GT(lines, 100);  // the tree was found
  EXPECT_LT(lines, 600) << "kernels/common/ holds only what several families share";
}

TEST(House, ReferenceDependsOnNothingItJudges) {
  int includes = 0;
  for (const auto& f : sources_under("reference"))
    for (const auto& inc : f.includes) {
      ++includes;
      EXPECT_TRUE(starts_with(inc, "reference/") || starts_with(inc, "core/")) << f.path << " includes " << inc;
    }
  EXPECT_GT(includes, 5);
}

TEST(House, CoreIncludesOnlyCore) {
  for (const auto& f : sources_under("src/core"))
    for (const auto& inc : f.includes) EXPECT_TRUE(starts_with(inc, "core/")) << f.path << " includes " << inc;
}

TEST(House, StepDeviceHeadersHaveOneTranslationUnit) {
  std::set<std::string> includers;
  for (const std::string dir : {"kernels", "src", "tests"})
    for (const auto& f : sources_under(dir))
      for (const auto& inc : f.includes)
        if (starts_with(inc, "step/") && inc.size() > 4 && inc.substr(inc.size() - 4) == ".cuh" &&
            !starts_with(f.path, "kernels/step/") )
          includers.insert(f.path);
  EXPECT_TRUE(includers.empty()) << "outside kernels/step/: " << *includers.begin();
  int translation_units = 0;
  for (const auto& f : sources_under("kernels/step"))
    if (f.path.size() > 3 && f.path.substr(f.path.size() - 3) == ".cu") ++translation_units;
  EXPECT_EQ(translation_units, 1);
}

}  // namespace
}  // namespace gdn

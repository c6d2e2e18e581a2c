// Every script the README tells users to run exists and is executable (git mode 100755), so is
// every file under scripts/ that starts with "#!", and scripts/results.py's own tests pass.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

namespace {

namespace fs = std::filesystem;

const fs::path kRoot = GDN_SOURCE_DIR;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

bool executable(const fs::path& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & S_IXUSR) && (st.st_mode & S_IXOTH);
}

// "scripts/x.sh" anywhere in the README, and bare names such as "results.py".
std::set<std::string> scripts_named_in_readme() {
  const std::string readme = read_text(kRoot / "README.md");
  std::set<std::string> named;
  const std::regex with_path(R"(scripts/[A-Za-z0-9_./-]+\.(sh|py))"), bare(R"([A-Za-z0-9_-]+\.(sh|py))");
  for (std::sregex_iterator it(readme.begin(), readme.end(), with_path), end; it != end; ++it) named.insert(it->str());
  for (std::sregex_iterator it(readme.begin(), readme.end(), bare), end; it != end; ++it)
    if (fs::exists(kRoot / "scripts" / it->str())) named.insert("scripts/" + it->str());
  return named;
}

TEST(Scripts, EveryScriptTheReadmeNamesIsExecutable) {
  const auto named = scripts_named_in_readme();
  ASSERT_GE(named.size(), 5u) << "the README names run-default.sh, test.sh, build.sh, bench-gpu.sh, ...";
  EXPECT_TRUE(named.count("scripts/run-default.sh") && named.count("scripts/test.sh") && named.count("scripts/bench-gpu.sh"));
  for (const auto& rel : named) {
    EXPECT_TRUE(fs::exists(kRoot / rel)) << rel << " is named in README.md but does not exist";
    EXPECT_TRUE(executable(kRoot / rel)) << rel << " is named in README.md but is not executable (git mode 100755)";
  }
}

TEST(Scripts, EveryFileWithAShebangIsExecutable) {
  int checked = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kRoot / "scripts")) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    char head[2] = {};
    if (!in.read(head, 2) || head[0] != '#' || head[1] != '!') continue;
    ++checked;
    EXPECT_TRUE(executable(entry.path())) << fs::relative(entry.path(), kRoot).string() << " starts with #! but is not executable";
  }
  EXPECT_GE(checked, 5);
}

// scripts/results.py's own tests (tests/results/test_results.py, python3 only), one of which checks
// that the committed docs/PERFORMANCE.md and README results block are what results/ generates.
TEST(Scripts, ResultsToolTestsPass) {
  if (std::system("python3 -c 'import sys; sys.exit(sys.version_info < (3, 8))' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 (>= 3.8) not found";
  const fs::path log = fs::temp_directory_path() / ("results-tests.log." + std::to_string(::getpid()));
  const std::string cmd = "python3 '" + (kRoot / "tests/results/test_results.py").string() + "' > '" + log.string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  const std::string out = read_text(log);
  fs::remove(log);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("\nOK"), std::string::npos) << out;
}

}  // namespace

// Malformed configs through the real binary: every one ends with exit 3 in under a second, under
// an address-space cap of 100 MiB beyond the program's own file, naming the file and line (docs/config.md "Limits"). The in-process
// checks of each limit are in test_config_limits.cpp.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <string>

namespace {

// The cap is headroom over the program's image: the fat binary maps every architecture's kernels
// (70 MB in a full build, 30 MB for one architecture), which is not memory a config can grow.
constexpr rlim_t kMemoryHeadroom = rlim_t(100) << 20;
const rlim_t kMemoryCap = kMemoryHeadroom + rlim_t(std::filesystem::file_size(GDN_BINARY));
constexpr double kTimeLimitS = 1.0;

struct Outcome {
  int code = -1;
  std::string out;
  double seconds = 0;
  long max_rss_kib = 0;
};

// Runs `gdnbench plan --config path` in a child with RLIMIT_AS = kMemoryCap (and a CPU-time
// backstop, so a regression cannot hang the suite); output, exit code, wall time and peak RSS.
Outcome plan_under_cap(const std::string& path) {
  const std::string out_path = path + ".out";
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    const rlimit as{kMemoryCap, kMemoryCap}, cpu{10, 10};
    setrlimit(RLIMIT_AS, &as);
    setrlimit(RLIMIT_CPU, &cpu);
    const int fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1), dup2(fd, 2);
    execl(GDN_BINARY, GDN_BINARY, "plan", "--config", path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  Outcome o;
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  o.max_rss_kib = usage.ru_maxrss;
  std::ifstream in(out_path);
  o.out.assign(std::istreambuf_iterator<char>(in), {});
  return o;
}

std::string write_file(const std::string& name, const std::string& text) {
  auto dir = std::filesystem::temp_directory_path() / ("gdnbench_bombs_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

void expect_fast_small_exit_three(const std::string& path, int line, const std::string& fragment) {
  const Outcome o = plan_under_cap(path);
  EXPECT_EQ(o.code, 3) << o.out;
  EXPECT_NE(o.out.find(fmt::format("{}:{}: ", path, line)), std::string::npos) << o.out.substr(0, 400);
  EXPECT_NE(o.out.find(fragment), std::string::npos) << o.out.substr(0, 400);
  EXPECT_LT(o.seconds, kTimeLimitS) << path;
  EXPECT_LT(o.max_rss_kib, long(kMemoryCap >> 10)) << path;
}

std::string repeat(const std::string& s, std::size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

// Every bomb runs under RLIMIT_AS: an ASan build reserves terabytes of shadow address space, so
// no cap can hold it. The plain build (scripts/test.sh) runs these; the sanitizer tree skips them.
class ConfigBombs : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "RLIMIT_AS cannot bound an ASan process; the plain build runs this test";
#endif
  }
};

TEST_F(ConfigBombs, BillionLaughs) {
  std::string text = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (char c = 'b'; c <= 'i'; ++c) text += fmt::format("{0}: &{0} [*{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}]\n", c, char(c - 1));
  text += "cases: *i\n";
  expect_fast_small_exit_three(write_file("laughs.yaml", text), 1, "anchors and aliases are not supported");
}

TEST_F(ConfigBombs, DeepNesting) {
  expect_fast_small_exit_three(write_file("deep.yaml", "cases:\n  " + repeat("[", 50000) + repeat("]", 50000)), 2,
                               "nesting deeper than 64 levels");
  expect_fast_small_exit_three(write_file("deep.json", repeat("[", 1000000)), 1, "nesting deeper than 64 levels");
  std::string block;
  for (int i = 0; i < 300; ++i) block += std::string(std::size_t(i), ' ') + "-\n";
  expect_fast_small_exit_three(write_file("deep_block.yaml", block), 65, "nesting deeper than 64 levels");
}

// Without the lookahead bound, yaml-cpp queued 250 MB of tokens for this before the first event.
TEST_F(ConfigBombs, FlowKeyLookahead) {
  expect_fast_small_exit_three(write_file("brackets.yaml", "cases:\n  " + repeat("[", 1000000)), 1,
                               "without a complete value");
}

TEST_F(ConfigBombs, HugeFileAndEndlessFile) {
  expect_fast_small_exit_three(write_file("huge.yaml", "cases:\n" + repeat("  - op: decode\n", 500000)), 69906,
                               "larger than the 1 MiB limit");
}

TEST_F(ConfigBombs, EndlessFileIsRefusedUnread) {
  // /dev/zero is not a regular file: refused before a byte is read.
  const Outcome o = plan_under_cap("/dev/zero");
  EXPECT_EQ(o.code, 3) << o.out;
  EXPECT_NE(o.out.find("'/dev/zero': it is a character device"), std::string::npos) << o.out;
  EXPECT_LT(o.seconds, kTimeLimitS);
  EXPECT_LT(o.max_rss_kib, long(kMemoryCap >> 10));
}

TEST_F(ConfigBombs, HugeScalar) {
  // Past 128 KiB yaml-cpp is stopped before it has the whole value: the message says so.
  expect_fast_small_exit_three(write_file("scalar.yaml", "cases: []\ndescription: " + std::string(1000000, 'x') + "\n"), 2,
                               "a value may have at most 64 KiB");
  expect_fast_small_exit_three(write_file("scalar100k.yaml", "cases: []\ndescription: " + std::string(100000, 'x') + "\n"),
                               2, "more than the 64 KiB limit");
  expect_fast_small_exit_three(write_file("scalar.json", "{\"cases\": [],\n\"description\": \"" + std::string(1000000, 'x') + "\"}"),
                               2, "more than the 64 KiB limit");
}

TEST_F(ConfigBombs, ManyNodes) {
  expect_fast_small_exit_three(write_file("many.json", "{\"cases\": [" + repeat("{},", 300000) + "{}]}"), 1,
                               "keys, values, lists and maps");
  expect_fast_small_exit_three(write_file("many.yaml", "cases: [" + repeat("{},", 300000) + "{}]\n"), 1,
                               "keys, values, lists and maps");
}

// Every point is built and checked before anything runs: the last of almost 100,000 is invalid.
TEST_F(ConfigBombs, BadLastPointOfTheLargestSweep) {
  std::string dims, batches;
  for (int d = 1; d <= 99; ++d) dims += std::to_string(d) + ", ";
  for (int b = 1; b <= 1000; ++b) batches += std::to_string(b) + (b < 1000 ? ", " : "");
  expect_fast_small_exit_three(
      write_file("points.yaml", "cases:\n  - op: decode\n    head_dim: [" + dims + "2000]\n    batch: [" + batches + "]\n"),
      2, "head dims must be in 1..1024");
}

}  // namespace

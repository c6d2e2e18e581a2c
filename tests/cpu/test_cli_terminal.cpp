// The real binary as a person at a terminal meets it: output that fits 120 columns, defaults in
// --help, calibrate without a GPU, the default sweep, the no --json notice, and Ctrl-C.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Output {
  int code;
  std::string text;  // stdout and stderr together
};

// `prefix` goes before the binary on the shell line: an environment setting, a `cd DIR &&`.
Output shell(const std::string& prefix, const std::string& args) {
  const std::string cmd = prefix + " " + GDN_BINARY + " " + args + " 2>&1";
  gdn::test::ShellResult r = gdn::test::run_shell(cmd);
  return {r.code, std::move(r.out)};
}

std::string src(const std::string& rel) { return std::string(GDN_SOURCE_DIR) + "/" + rel; }

fs::path scratch(const std::string& name) {
  const auto dir = fs::temp_directory_path() / ("gdnbench_cli_terminal_" + std::to_string(getpid())) / name;
  fs::create_directories(dir);
  return dir;
}

// Every line of `text` at most `columns` wide (the line is the failure message).
void expect_fits(const std::string& text, std::size_t columns) {
  for (std::size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    EXPECT_LE(end - start, columns) << text.substr(start, end - start);
}

// The line of `text` that holds `needle` ("" when none).
std::string line_with(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  if (at == std::string::npos) return "";
  const auto start = text.rfind('\n', at);
  return text.substr(start == std::string::npos ? 0 : start + 1, text.find('\n', at) - (start == std::string::npos ? 0 : start + 1));
}

// Fast timing for the CPU variants: a few samples, a loose noise target, a short cap.
const std::string kQuickTiming = " --min-samples 3 --host-max-noise 50 --host-timeout 0.2";

TEST(CliTerminal, RunOfTheCiSweepFits120Columns) {
  // Without a GPU the CUDA variants are listed as skipped, each with its reason: those fold too.
  const auto r = shell("COLUMNS=120", "run --config " + src("configs/ci.yaml") + kQuickTiming);
  EXPECT_TRUE(r.code == 0) << r.text;
  expect_fits(r.text, 120);
  EXPECT_NE(r.text.find("prefill ("), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("decode ("), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("mtp ("), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("PASS"), std::string::npos) << r.text;
}

TEST(CliTerminal, CompareAndPeersOfSavedReportsFit120Columns) {
  const std::string ours = src("tests/data/reports/ours.json"), next = src("tests/data/reports/new.json"),
                    peers = src("tests/data/reports/peers.json");
  // One row slower, one failing verification, one missing (allowed, so the regression decides).
  const auto cmp = shell("COLUMNS=120", "compare " + ours + " " + next + " --allow-missing");
  EXPECT_EQ(cmp.code, 1) << cmp.text;
  expect_fits(cmp.text, 120);
  EXPECT_NE(cmp.text.find("slower"), std::string::npos) << cmp.text;
  EXPECT_NE(cmp.text.find("failed-verification"), std::string::npos) << cmp.text;
  EXPECT_NE(cmp.text.find("every row: mode cold"), std::string::npos) << cmp.text;
  EXPECT_NE(cmp.text.find("NVIDIA H200"), std::string::npos) << cmp.text;  // two devices: named above or in the rows

  const auto peer = shell("COLUMNS=120", "peers " + ours + " --peer " + peers);
  EXPECT_EQ(peer.code, 0) << peer.text;
  expect_fits(peer.text, 120);
  for (const char* section : {"prefill against the peers", "decode against the peers", "mtp against the peers"})
    EXPECT_NE(peer.text.find(section), std::string::npos) << section << "\n" << peer.text;
  EXPECT_NE(peer.text.find("flashqla"), std::string::npos) << peer.text;
  EXPECT_NE(peer.text.find("*"), std::string::npos) << "the fastest peer is marked\n" << peer.text;

  // A wide terminal gets the whole shape keys back.
  const auto wide = shell("COLUMNS=400", "peers " + ours + " --peer " + peers);
  EXPECT_NE(wide.text.find("h16/32 d128x128 B=64 state=bf16 layout=vk pool=64 idx=identity gate=log"), std::string::npos)
      << wide.text;
}

TEST(CliTerminal, HelpShowsDefaults) {
  const auto run = shell("", "run --help");
  EXPECT_EQ(run.code, 0) << run.text;
  EXPECT_NE(line_with(run.text, "  --min-samples ").find("=10"), std::string::npos) << run.text;
  EXPECT_NE(line_with(run.text, "  --mode ").find("=cold"), std::string::npos) << run.text;
  EXPECT_NE(line_with(run.text, "  --max-noise ").find("=0.5"), std::string::npos) << run.text;
  EXPECT_NE(run.text.find("configs/default.yaml"), std::string::npos) << run.text;
  const auto cmp = shell("", "compare --help");
  EXPECT_NE(line_with(cmp.text, "  --threshold ").find("=5"), std::string::npos) << cmp.text;
  EXPECT_NE(cmp.text.find("5 %"), std::string::npos) << cmp.text;
}

TEST(CliTerminal, CalibrateWithoutAGpuSaysSoAndExitsFour) {
  if (shell("", "info").text.find("CUDA devices: none") == std::string::npos) GTEST_SKIP() << "a CUDA device is present";
  const auto r = shell("", "calibrate");
  EXPECT_EQ(r.code, 4) << r.text;
  EXPECT_NE(r.text.find("no CUDA device: calibrate measures a GPU's peaks; nothing to do here"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find(".cu:"), std::string::npos) << "no source path\n" << r.text;
}

TEST(CliTerminal, RunWithoutJsonSaysResultsStayOnTheTerminal) {
  const std::string args = "run --quiet --op decode --config " + src("tests/data/tiny.yaml") + kQuickTiming;
  const auto without = shell("", args);
  EXPECT_EQ(without.code, 0) << without.text;
  EXPECT_NE(without.text.find("results go to the terminal only; pass --json FILE to keep a report"), std::string::npos)
      << without.text;
  const auto with = shell("", args + " --json " + (scratch("json") / "r.json").string());
  EXPECT_EQ(with.code, 0) << with.text;
  EXPECT_EQ(with.text.find("terminal only"), std::string::npos) << with.text;
}

TEST(CliTerminal, RunWithoutConfigUsesTheDefaultSweepOfTheWorkingDirectory) {
  const auto dir = scratch("default");
  fs::create_directories(dir / "configs");
  fs::copy_file(src("tests/data/tiny.yaml"), dir / "configs" / "default.yaml", fs::copy_options::overwrite_existing);
  const auto r = shell("cd " + dir.string() + " &&", "verify --quiet --op decode");
  EXPECT_EQ(r.code, 0) << r.text;
  EXPECT_NE(r.text.find("no --config given: running configs/default.yaml"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("4 cases: 4 ok"), std::string::npos) << r.text;

  const auto empty = scratch("empty");
  const auto none = shell("cd " + empty.string() + " &&", "run");
  EXPECT_EQ(none.code, 3) << none.text;
  EXPECT_NE(none.text.find("pass --config FILE"), std::string::npos) << none.text;
}

// ---- Ctrl-C ------------------------------------------------------------------------------

// The binary started with its stdout and stderr on one pipe, so a test can read what it says
// while it runs and signal it.
class Running {
 public:
  explicit Running(const std::vector<std::string>& args) {
    int fds[2];
    if (pipe(fds) != 0) return;
    std::vector<std::string> argv{GDN_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    if (posix_spawn(&pid_, GDN_BINARY, &actions, nullptr, cargv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    out_fd_ = fds[0];
  }
  ~Running() {
    if (pid_ > 0 && !exited_) kill(pid_, SIGKILL), waitpid(pid_, nullptr, 0);
    if (out_fd_ >= 0) close(out_fd_);
  }

  bool started() const { return pid_ > 0; }
  void interrupt() const { kill(pid_, SIGINT); }

  // Reads until the output holds `needle` or `seconds` pass; whether it does.
  bool wait_for(const std::string& needle, double seconds) {
    const auto end = Clock::now() + std::chrono::duration<double>(seconds);
    while (text_.find(needle) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
      if (left <= 0 || !read_some(int(left))) return text_.find(needle) != std::string::npos;
    }
    return true;
  }

  // The exit code once it exits within `seconds` (128 + N for signal N), else -1.
  int wait_exit(double seconds) {
    const auto end = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < end) {
      read_some(50);
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        while (read_some(50)) {
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
    }
    return -1;
  }

  bool running() const { return !exited_ && waitpid(pid_, nullptr, WNOHANG) == 0; }
  const std::string& text() const { return text_; }

  // Waits until the child has spent `cpu_s` seconds of CPU time (/proc/PID/stat: utime + stime)
  // or `seconds` pass; whether it has. A sweep whose case times without end spins the CPU, so
  // this says a case is under way: a Ctrl-C before the first case stops the run at once.
  bool wait_for_cpu(double cpu_s, double seconds) const {
    const auto end = Clock::now() + std::chrono::duration<double>(seconds);
    const double tick = double(sysconf(_SC_CLK_TCK));
    while (Clock::now() < end) {
      std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
      std::string line;
      std::getline(stat, line);
      const auto close = line.rfind(')');
      if (close == std::string::npos) return false;
      std::istringstream fields(line.substr(close + 2));
      std::string field;
      unsigned long long utime = 0, stime = 0;
      for (int i = 3; i <= 15 && fields >> field; ++i) {
        if (i == 14) utime = std::stoull(field);
        if (i == 15) stime = std::stoull(field);
      }
      if (double(utime + stime) / tick >= cpu_s) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

 private:
  // Up to `ms` milliseconds for more output; false at the end of it or on a timeout.
  bool read_some(int ms) {
    pollfd p{out_fd_, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0) return false;
    char buf[4096];
    const ssize_t n = read(out_fd_, buf, sizeof buf);
    if (n <= 0) return false;
    text_.append(buf, std::size_t(n));
    return true;
  }

  pid_t pid_ = -1;
  int out_fd_ = -1;
  bool exited_ = false;
  std::string text_;
};

// A CPU timing that runs to its cap: no noise target it can meet, no sample limit it reaches.
std::vector<std::string> endless_timing(const std::string& cap_s) {
  return {"--min-samples", "1000000", "--max-samples", "1000000000", "--host-max-noise", "0.000001", "--host-timeout", cap_s};
}

TEST(CliTerminal, CtrlCIsHeardAtOnceAndASecondStopsNow) {
  std::vector<std::string> args{"run", "--op", "decode", "--config", src("tests/data/tiny.yaml")};
  for (auto& a : endless_timing("60")) args.push_back(a);
  Running run(args);
  ASSERT_TRUE(run.started());
  // The notice comes after the handler is in place; the first Ctrl-C goes once the case times.
  ASSERT_TRUE(run.wait_for("results go to the terminal only", 30)) << run.text();
  ASSERT_TRUE(run.wait_for_cpu(0.5, 30)) << run.text();
  run.interrupt();
  ASSERT_TRUE(run.wait_for("Ctrl-C again to stop now", 3)) << run.text();
  EXPECT_NE(run.text().find("stopping after the current case ("), std::string::npos) << run.text();
  EXPECT_TRUE(run.running()) << "the first Ctrl-C lets the case finish\n" << run.text();
  run.interrupt();
  EXPECT_EQ(run.wait_exit(3), 130) << run.text();
  EXPECT_NE(run.text().find("stopped now"), std::string::npos) << run.text();
}

TEST(CliTerminal, CtrlCStopsAfterTheCaseWithTheReportSoFar) {
  const auto json = scratch("interrupt") / "report.json";
  fs::remove(json);
  std::vector<std::string> args{"run", "--op", "decode", "--config", src("tests/data/tiny.yaml"), "--json", json.string()};
  for (auto& a : endless_timing("1")) args.push_back(a);
  Running run(args);
  ASSERT_TRUE(run.started());
  // The report appears when the first of the four cases is done (written whole, then renamed).
  const auto end = Clock::now() + std::chrono::seconds(60);
  while (!fs::exists(json) && Clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(fs::exists(json)) << run.text();
  run.interrupt();
  EXPECT_TRUE(run.wait_for("stopping after the current case", 3)) << run.text();
  EXPECT_EQ(run.wait_exit(30), 130) << run.text();
  EXPECT_NE(run.text().find("interrupted; the report keeps every finished case"), std::string::npos) << run.text();
  const auto j = nlohmann::json::parse(std::ifstream(json));
  EXPECT_FALSE(j["complete"].get<bool>());
  EXPECT_EQ(j["finished_at"], "") << "an interrupted run did not finish";
  EXPECT_GE(j["cases"].size(), 1u);
  EXPECT_LT(j["cases"].size(), 4u) << "the sweep stopped early";
}

}  // namespace

// Runs the CLI as a child with a deadline and measures what a refusal costs: its exit, its
// output, its wall time and its peak RSS (wait4), so a test can say "exit 3 in under 5 s and
// 200 MB" of a hostile input.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace gdn::test {

struct ChildResult {
  int code = -1;          // exit status; -1 when killed by a signal
  int signal = 0;         // the signal that ended it, 0 if it exited
  bool timed_out = false; // killed at the deadline
  double seconds = 0;
  double peak_mib = 0;    // peak resident set
  std::string out;        // stdout and stderr together
};

inline ChildResult run_child(const std::vector<std::string>& args, double deadline_s = 30) {
  static int counter = 0;
  const auto out_path = std::filesystem::temp_directory_path() /
                        ("gdnbench_child_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + ".log");
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO), dup2(fd, STDERR_FILENO);
    const int null_in = open("/dev/null", O_RDONLY);
    dup2(null_in, STDIN_FILENO);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  ChildResult r;
  int status = 0;
  rusage ru{};
  while (true) {
    const pid_t done = wait4(pid, &status, WNOHANG, &ru);
    if (done == pid) break;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > deadline_s) {
      kill(pid, SIGKILL);
      wait4(pid, &status, 0, &ru);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.peak_mib = double(ru.ru_maxrss) / 1024.0;
  if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  std::ifstream in(out_path);
  std::stringstream ss;
  ss << in.rdbuf();
  r.out = ss.str();
  std::filesystem::remove(out_path);
  return r;
}

// The CLI with these arguments (GDN_BINARY: gdnbench-testing).
inline ChildResult gdnbench(std::vector<std::string> args, double deadline_s = 30) {
  args.insert(args.begin(), GDN_BINARY);
  return run_child(args, deadline_s);
}

}  // namespace gdn::test

namespace gdn::test {

// What a refusal may cost (issue: under 5 s and 200 MB). A sanitizer build keeps freed memory in
// quarantine and runs several times slower, so there only the exit and the time are held to a
// bound, the time three times looser.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr double kRefusalSeconds = 15, kRefusalMiB = 1e9;
#else
inline constexpr double kRefusalSeconds = 5, kRefusalMiB = 200;
#endif

// A folder of its own for one test, removed after it.
class Scratch {
 public:
  explicit Scratch(const std::string& tag)
      : dir_(std::filesystem::temp_directory_path() / ("gdnbench_" + tag + "_" + std::to_string(getpid()))) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~Scratch() { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string put(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name);
  }

 private:
  std::filesystem::path dir_;
};

}  // namespace gdn::test

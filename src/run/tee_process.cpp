#include "run/tee_process.h"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <deque>

extern char** environ;

namespace gdn {

bool TeeResult::ok() const { return spawn_error == 0 && WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0; }

std::string TeeResult::how_it_ended() const {
  if (spawn_error != 0) return fmt::format("could not start: {}", std::strerror(spawn_error));
  if (WIFSIGNALED(wait_status))
    return fmt::format("died with signal {} ({})", WTERMSIG(wait_status), strsignal(WTERMSIG(wait_status)));
  return fmt::format("exited with code {}", WEXITSTATUS(wait_status));
}

TeeResult run_tee(const std::vector<std::string>& argv, bool echo, bool capture_stdout, std::size_t keep_lines) {
  TeeResult res;
  int fds[2];
  if (pipe(fds) != 0) {
    res.spawn_error = errno;
    return res;
  }
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  if (capture_stdout) posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  pid_t pid = 0;
  res.spawn_error = posix_spawnp(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::deque<std::string> lines(1);
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (echo) {
      for (ssize_t done = 0; done < n;) {
        const ssize_t w = write(STDERR_FILENO, buf + done, std::size_t(n - done));
        if (w <= 0) break;
        done += w;
      }
    }
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] != '\n') {
        if (lines.back().size() < 2000) lines.back() += buf[i];  // a runaway line stays bounded
        continue;
      }
      lines.emplace_back();
      while (lines.size() > keep_lines + 1) lines.pop_front();
    }
  }
  close(fds[0]);
  if (res.spawn_error == 0)
    while (waitpid(pid, &res.wait_status, 0) < 0 && errno == EINTR) {
    }
  if (lines.back().empty()) lines.pop_back();
  for (const auto& l : lines) res.tail += (res.tail.empty() ? "" : "\n") + l;
  return res;
}

}  // namespace gdn

#include "run/isolate.h"

#include <csignal>
#include <fcntl.h>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report/report.h"

extern char** environ;

namespace gdn {

IsolatedChild start_isolated(const std::vector<std::string>& child_argv, std::size_t index) {
  IsolatedChild child;
  const auto tmp = std::filesystem::temp_directory_path() /
                   fmt::format("gdnbench-isolate-{}-{}.json", getpid(), index);
  child.report = tmp.string();
  std::filesystem::remove(tmp);
  std::vector<std::string> args = child_argv;
  args.insert(args.end(), {"--only-point", std::to_string(index), "--json", child.report, "--quiet"});
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);

  // The child writes its own stdout (a one-line summary) to /dev/null: the parent prints tables.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  child.spawn_error = posix_spawn(&child.pid, "/proc/self/exe", &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return child;
}

CaseRecord finish_isolated(const IsolatedChild& child, int status, const std::function<void(CaseRecord&)>& identify) {
  const std::filesystem::path tmp = child.report;
  CaseRecord r;
  if (child.spawn_error == 0 && std::filesystem::exists(tmp)) {
    try {
      auto rep = load_report(tmp.string());
      std::filesystem::remove(tmp);
      if (rep.cases.size() == 1) return rep.cases.front();
    } catch (const std::exception&) {
    }
  }
  std::filesystem::remove(tmp);
  identify(r);
  r.status = CaseStatus::error;
  if (child.spawn_error != 0)
    r.reason = fmt::format("could not start the isolated child: {}", std::strerror(child.spawn_error));
  else if (WIFSIGNALED(status))
    r.reason = fmt::format("isolated child died with signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else r.reason = fmt::format("isolated child exited with code {} and wrote no record", WEXITSTATUS(status));
  return r;
}

CaseRecord run_isolated(const std::vector<std::string>& child_argv, std::size_t index,
                        const std::function<void(CaseRecord&)>& identify) {
  const IsolatedChild child = start_isolated(child_argv, index);
  int status = 0;
  if (child.spawn_error == 0) waitpid(child.pid, &status, 0);
  return finish_isolated(child, status, identify);
}

}  // namespace gdn

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

CaseRecord run_isolated(const std::vector<std::string>& child_argv, std::size_t index,
                        const std::function<void(CaseRecord&)>& identify) {
  const auto tmp = std::filesystem::temp_directory_path() /
                   fmt::format("gdnbench-isolate-{}-{}.json", getpid(), index);
  std::filesystem::remove(tmp);
  std::vector<std::string> args = child_argv;
  args.insert(args.end(), {"--only-point", std::to_string(index), "--json", tmp.string(), "--quiet"});
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);

  pid_t pid = 0;
  // The child writes its own stdout (a one-line summary) to /dev/null: the parent prints tables.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  const int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  if (rc == 0) waitpid(pid, &status, 0);

  CaseRecord r;
  if (rc == 0 && std::filesystem::exists(tmp)) {
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
  if (rc != 0) r.reason = fmt::format("could not start the isolated child: {}", std::strerror(rc));
  else if (WIFSIGNALED(status))
    r.reason = fmt::format("isolated child died with signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else r.reason = fmt::format("isolated child exited with code {} and wrote no record", WEXITSTATUS(status));
  return r;
}

}  // namespace gdn

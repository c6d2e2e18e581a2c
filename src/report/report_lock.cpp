#include "report/report_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>

#include "core/errors.h"

namespace gdn {

namespace fs = std::filesystem;

ReportLock::ReportLock(const std::string& report_path) : lock_path_(report_path + ".lock") {
  // The holder unlinks the lock file when it ends; a waiter that then locks the unlinked file
  // would share nothing with the next run, so the lock counts only while the name still points
  // at the locked file.
  for (int attempt = 0; attempt < 100; ++attempt) {
    fd_ = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw runtime_error(fmt::format("cannot lock report '{}': cannot create '{}': {}", report_path, lock_path_,
                                      std::strerror(errno)));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      char pid[32] = {};
      const ssize_t n = ::pread(fd_, pid, sizeof pid - 1, 0);
      ::close(fd_), fd_ = -1;
      if (err == EWOULDBLOCK)
        throw runtime_error(fmt::format("report '{}' is being written by another gdnbench{} (it holds '{}'): wait for "
                                        "it to end, or write this run to another --json",
                                        report_path, n > 0 ? fmt::format(" (pid {})", std::string(pid, std::size_t(n))) : "",
                                        lock_path_));
      throw runtime_error(fmt::format("cannot lock report '{}' ('{}'): {}", report_path, lock_path_, std::strerror(err)));
    }
    struct stat held {}, named {};
    if (::fstat(fd_, &held) == 0 && ::stat(lock_path_.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev) {
      const std::string pid = std::to_string(::getpid());
      if (::ftruncate(fd_, 0) == 0) {
        [[maybe_unused]] const ssize_t n = ::pwrite(fd_, pid.data(), pid.size(), 0);  // for a second run's message
      }
      remove_stale_temp_files(report_path);
      return;
    }
    ::close(fd_), fd_ = -1;  // unlinked under us: lock the new one
  }
  throw runtime_error(fmt::format("cannot lock report '{}': '{}' keeps changing", report_path, lock_path_));
}

ReportLock::~ReportLock() {
  if (fd_ < 0) return;
  ::unlink(lock_path_.c_str());  // still held: no other run has it open as the named file
  ::close(fd_);
}

int remove_stale_temp_files(const std::string& report_path) {
  const fs::path report(report_path);
  const fs::path dir = report.parent_path().empty() ? fs::path(".") : report.parent_path();
  const std::string prefix = report.filename().string() + ".tmp.";
  int removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const char* first = name.data() + prefix.size();
    const char* last = name.data() + name.size();
    pid_t pid = 0;
    auto [p, err] = std::from_chars(first, last, pid);
    if (err != std::errc() || p != last || pid <= 0) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to ask): leave it
    std::error_code rm;
    if (fs::remove(it->path(), rm)) ++removed;
  }
  return removed;
}

}  // namespace gdn

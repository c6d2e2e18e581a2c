// One writer per report: `run --json X` holds an exclusive flock on X.lock for the whole sweep,
// so a second run writing the same report is refused at once (exit 4) instead of silently
// replacing the first one's records. Holding it, the run also removes X.tmp.<pid> files that a
// killed writer left behind (write_file_atomic's temp files of processes that no longer exist).
#pragma once

#include <string>

namespace gdn {

class ReportLock {
 public:
  // Throws runtime_error (exit 4) naming the report and the holder's pid when another process
  // holds the lock, or when the lock file cannot be created.
  explicit ReportLock(const std::string& report_path);
  ~ReportLock();
  ReportLock(const ReportLock&) = delete;
  ReportLock& operator=(const ReportLock&) = delete;

  const std::string& lock_path() const { return lock_path_; }

 private:
  std::string lock_path_;
  int fd_ = -1;
};

// Removes `report_path`.tmp.<pid> files whose process is gone; returns how many.
int remove_stale_temp_files(const std::string& report_path);

}  // namespace gdn

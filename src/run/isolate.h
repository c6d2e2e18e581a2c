// --isolate: one (point, variant) per child process, so a fault that poisons a CUDA context or
// kills the process is recorded as that case's error and the sweep goes on. --devices runs
// several such children at once (run/devices.h).
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "report/record.h"

namespace gdn {

// A child started on one plan entry.
struct IsolatedChild {
  pid_t pid = 0;
  int spawn_error = 0;  // errno of posix_spawn; 0 when the child runs
  std::string report;   // the one-record report it writes
};

// Starts `child_argv` + "--only-point INDEX --json TMP --quiet" without waiting.
IsolatedChild start_isolated(const std::vector<std::string>& child_argv, std::size_t index);
// The record the child wrote, given its wait status. When it left none (crash, signal, abort),
// an error record filled by `identify` with the exit status as its reason.
CaseRecord finish_isolated(const IsolatedChild& child, int wait_status, const std::function<void(CaseRecord&)>& identify);

// Both, waiting for the child in between.
CaseRecord run_isolated(const std::vector<std::string>& child_argv, std::size_t index,
                        const std::function<void(CaseRecord&)>& identify);

}  // namespace gdn

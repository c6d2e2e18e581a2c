// Runs a helper program (a peer harness) to its end: its stderr is copied to ours as it comes
// (its progress reaches the terminal) while the last lines are kept for a record's reason.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gdn {

struct TeeResult {
  int spawn_error = 0;   // errno of posix_spawnp (ENOENT: no such program); 0 when it ran
  int wait_status = 0;   // as waitpid gives it
  std::string tail;      // the last lines it wrote to stderr (and to stdout, when captured)

  bool ok() const;             // ran and exited 0
  std::string how_it_ended() const;  // "exited with code 3", "died with signal 9 (Killed)", "could not start: ..."
};

// argv[0] is looked up in PATH. echo: copy the child's stderr to ours; capture_stdout: its stdout
// goes into the tail too (and is echoed with it) instead of straight to ours.
TeeResult run_tee(const std::vector<std::string>& argv, bool echo, bool capture_stdout, std::size_t keep_lines = 20);

}  // namespace gdn

// Output paths checked before a sweep starts, so that no output destroys an input or another
// output and none fails only after the work is done: an output may not be the config, a --peer
// report or (except --json) the --resume report, nor the same file as another output, nor an
// existing directory, device or FIFO; its directory must exist and be writable.
#pragma once

#include <string>
#include <vector>

namespace gdn::cli {

struct NamedPath {
  std::string flag;  // "--json", "--config", ...
  std::string path;
};

// input_error (exit 3) for a clash or a non-regular file, runtime_error (exit 4) for a directory
// that is missing or not writable; each names the flag and the path. `outputs` with an empty path
// are not given and skipped. --json may be the --resume report: a run resumes and rewrites it.
void check_output_paths(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs);

}  // namespace gdn::cli

// --devices 0,1,...: the plan's entries run at once on several GPUs of one host, each in a child
// process (the --isolate child) pinned to its GPU with --device. Entries are dealt from one queue
// to whichever GPU frees first, so a slow point holds up one GPU only. Entries of CPU variants
// take one host slot beside the GPUs, one at a time: two at once would time each other's use of
// the host's cores.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "report/record.h"

namespace gdn {

struct DeviceJob {
  std::size_t entry = 0;  // index into the full plan (the child's --only-point)
  bool host = false;      // a CPU variant: the host slot
};

struct DeviceQueue {
  std::vector<std::string> child_argv;  // the program and its sweep flags, without --device
  std::vector<int> devices;             // CUDA device indices, each a slot
  // Fills the identity of a job's record when its child wrote none.
  std::function<void(const DeviceJob&, CaseRecord&)> identify;
  // Called in this process as each child ends, in the order they end.
  std::function<void(const DeviceJob&, CaseRecord&&)> finished;
  // Checked before each job is dealt: true stops dealing (Ctrl-C); running children finish.
  std::function<bool()> stop;
};

// Runs every job; returns when each dealt job has finished. Children are waited for even after
// `stop`, so every started case lands in the report.
void run_on_devices(const DeviceQueue& q, const std::vector<DeviceJob>& jobs);

// "0,1,3" -> {0, 1, 3}: distinct non-negative indices, at most 64. input_error naming --devices.
std::vector<int> parse_device_list(const std::string& text);

}  // namespace gdn

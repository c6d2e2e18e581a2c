#include "run/devices.h"

#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <fmt/format.h>
#include <map>

#include "core/errors.h"
#include "run/isolate.h"

namespace gdn {
namespace {

constexpr std::size_t kMaxDevices = 64;

struct Running {
  DeviceJob job;
  IsolatedChild child;
  std::size_t slot;
};

}  // namespace

void run_on_devices(const DeviceQueue& q, const std::vector<DeviceJob>& jobs) {
  // Slots 0..n-1 are the GPUs, slot n the host.
  const std::size_t host_slot = q.devices.size();
  std::vector<bool> busy(q.devices.size() + 1, false);
  std::deque<DeviceJob> pending(jobs.begin(), jobs.end());
  std::map<pid_t, Running> running;

  auto deal = [&] {
    for (std::size_t slot = 0; slot < busy.size(); ++slot) {
      if (busy[slot] || (q.stop && q.stop())) continue;
      const bool host = slot == host_slot;
      auto it = std::find_if(pending.begin(), pending.end(), [&](const DeviceJob& j) { return j.host == host; });
      if (it == pending.end()) continue;
      const DeviceJob job = *it;
      pending.erase(it);
      std::vector<std::string> argv = q.child_argv;
      argv.insert(argv.end(), {"--device", std::to_string(q.devices[host ? 0 : slot])});
      IsolatedChild child = start_isolated(argv, job.entry);
      if (child.spawn_error != 0) {
        q.finished(job, finish_isolated(child, 0, [&](CaseRecord& r) { q.identify(job, r); }));
        --slot;  // the slot is still free: deal it again
        continue;
      }
      busy[slot] = true;
      running.emplace(child.pid, Running{job, child, slot});
    }
  };

  deal();
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw runtime_error(fmt::format("--devices: waiting for a child failed: {}", std::strerror(errno)));
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;  // not one of ours
    Running done = std::move(it->second);
    running.erase(it);
    busy[done.slot] = false;
    q.finished(done.job, finish_isolated(done.child, status, [&](CaseRecord& r) { q.identify(done.job, r); }));
    deal();
  }
}

std::vector<int> parse_device_list(const std::string& text) {
  std::vector<int> out;
  std::size_t start = 0;
  while (true) {
    const auto comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (part.empty() || part.size() > 4 || part.find_first_not_of("0123456789") != std::string::npos)
      throw input_error(fmt::format("--devices {}: expected CUDA device indices such as 0,1,2,3 (got '{}')", text, part));
    const int d = std::stoi(part);
    if (std::find(out.begin(), out.end(), d) != out.end())
      throw input_error(fmt::format("--devices {}: device {} is listed twice", text, d));
    out.push_back(d);
    if (out.size() > kMaxDevices) throw input_error(fmt::format("--devices {}: at most {} devices", text, kMaxDevices));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace gdn

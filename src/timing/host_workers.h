// A fixed set of host threads, each pinned to one CPU this process may run on, that run one job
// at a time on all of them. The cold-cache flush and the host bandwidth peak use it, so neither
// pays thread start-up inside what it does, and every core's private caches are reached.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gdn {

class HostWorkers {
 public:
  // count 0: one worker per CPU of the process's affinity mask.
  explicit HostWorkers(int count = 0);
  ~HostWorkers();
  HostWorkers(const HostWorkers&) = delete;
  HostWorkers& operator=(const HostWorkers&) = delete;

  int size() const { return count_; }

  // Runs job(worker) on every worker and waits for all. Returns the seconds from the moment every
  // worker was awake and ready (a barrier, so wake-up latency is not counted) to the moment the
  // last one finished. An exception from a job is rethrown here.
  double run(const std::function<void(int)>& job);

 private:
  void loop(int worker, int cpu);

  int count_ = 0;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  const std::function<void(int)>* job_ = nullptr;
  unsigned long generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  // The current job's start barrier, finish count, span and first error.
  std::atomic<int> ready_{0}, done_{0};
  std::atomic<bool> go_{false};
  std::chrono::steady_clock::time_point t0_, t1_;
  std::exception_ptr error_;
};

// CPUs this process may run on (sched_getaffinity), in order; {0 .. hardware_concurrency-1}
// when the mask cannot be read.
std::vector<int> allowed_cpus();

}  // namespace gdn

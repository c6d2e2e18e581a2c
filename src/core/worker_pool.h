// The process's pool of host worker threads, behind parallel_for: threads are started once and
// reused, so a CPU variant's timed call does not pay a thread start per worker (10-20 us each,
// docs/method.md 7.4). One call holds the pool at a time; a concurrent or nested call is
// refused (run returns false) and starts its own threads instead.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gdn {

class WorkerPool {
 public:
  static WorkerPool& shared();
  ~WorkerPool();

  // Runs job(w) for w = 1 .. helpers on pooled threads while the caller runs own(), and returns
  // once every helper has finished (fewer helpers if threads cannot be started). false, with
  // nothing run, when another call holds the pool. job and own must not throw.
  bool run(int helpers, const std::function<void(int)>& job, const std::function<void()>& own);

 private:
  void loop(int w);

  std::mutex busy_;  // held for a whole run
  std::mutex m_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;  // threads_[i] is helper i + 1
  const std::function<void(int)>* job_ = nullptr;
  int active_ = 0;   // helpers taking part in the current run
  int pending_ = 0;  // of those, not yet finished
  uint64_t generation_ = 0;
  std::atomic<uint64_t> published_{0};  // generation_, read without the lock by spinning helpers
  bool stop_ = false;
};

}  // namespace gdn

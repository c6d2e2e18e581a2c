#include "timing/host_workers.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>

namespace gdn {
namespace {

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // best effort: unpinned still works
}

// Spins briefly, then yields, so an oversubscribed host is not starved by the barrier.
template <class Ready>
void wait_until(Ready ready) {
  for (int spins = 0; !ready(); ++spins)
    if (spins > 1000) std::this_thread::yield();
}

}  // namespace

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (cpus.empty())
    for (unsigned c = 0; c < std::max(1u, std::thread::hardware_concurrency()); ++c) cpus.push_back(int(c));
  return cpus;
}

HostWorkers::HostWorkers(int count) {
  const std::vector<int> cpus = allowed_cpus();
  count_ = count > 0 ? count : int(cpus.size());
  threads_.reserve(std::size_t(count_));
  for (int w = 0; w < count_; ++w) threads_.emplace_back([this, w, cpu = cpus[std::size_t(w) % cpus.size()]] { loop(w, cpu); });
}

HostWorkers::~HostWorkers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

double HostWorkers::run(const std::function<void(int)>& job) {
  std::unique_lock<std::mutex> lock(mutex_);
  ready_ = 0, done_ = 0, go_ = false, error_ = nullptr;
  job_ = &job;
  pending_ = 1;
  ++generation_;
  wake_.notify_all();
  finished_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
  if (error_) std::rethrow_exception(error_);
  return std::chrono::duration<double>(t1_ - t0_).count();
}

void HostWorkers::loop(int worker, int cpu) {
  pin_to(cpu);
  unsigned long seen = 0;
  const int n = size();
  while (true) {
    const std::function<void(int)>* job = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    if (ready_.fetch_add(1) + 1 == n) {
      t0_ = std::chrono::steady_clock::now();
      go_.store(true, std::memory_order_release);
    } else {
      wait_until([&] { return go_.load(std::memory_order_acquire); });
    }
    try {
      (*job)(worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    if (done_.fetch_add(1) + 1 == n) {
      t1_ = std::chrono::steady_clock::now();
      std::lock_guard<std::mutex> lock(mutex_);
      pending_ = 0;
      finished_.notify_one();
    }
  }
}

}  // namespace gdn

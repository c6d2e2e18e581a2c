#include "core/worker_pool.h"

#include <chrono>
#include <system_error>

namespace gdn {
namespace {

// How long a helper keeps polling for the next run before it sleeps: a benchmark calls again
// within microseconds, and a wake-up through the condition variable costs about what it saves.
constexpr auto kSpin = std::chrono::microseconds(200);

}  // namespace

WorkerPool& WorkerPool::shared() {
  static WorkerPool pool;
  return pool;
}

WorkerPool::~WorkerPool() {
  {
    const std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
    published_.store(~uint64_t(0), std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

bool WorkerPool::run(int helpers, const std::function<void(int)>& job, const std::function<void()>& own) {
  std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
  if (!busy.owns_lock()) return false;
  {
    const std::lock_guard<std::mutex> lock(m_);
    while (int(threads_.size()) < helpers) {
      try {
        threads_.emplace_back(&WorkerPool::loop, this, int(threads_.size()) + 1);
      } catch (const std::system_error&) {
        break;  // out of threads: the ones there share the work
      }
    }
    job_ = &job;
    active_ = std::min(helpers, int(threads_.size()));
    pending_ = active_;
    published_.store(++generation_, std::memory_order_release);
  }
  wake_.notify_all();
  own();
  std::unique_lock<std::mutex> lock(m_);
  done_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
  return true;
}

void WorkerPool::loop(int w) {
  uint64_t seen = 0;
  for (;;) {
    // Poll first (cheap while runs follow each other), then sleep until the next run.
    const auto until = std::chrono::steady_clock::now() + kSpin;
    while (published_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < until)
      std::this_thread::yield();
    const std::function<void(int)>* job = nullptr;
    {
      std::unique_lock<std::mutex> lock(m_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (w > active_) continue;  // not needed in this run
      job = job_;
    }
    (*job)(w);
    const std::lock_guard<std::mutex> lock(m_);
    if (--pending_ == 0) done_.notify_one();
  }
}

}  // namespace gdn

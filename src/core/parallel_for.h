// The one host parallel-for (CPU variants and the reference). Workers pull task indices from a shared counter, so
// tasks of unequal size (ragged sequences) balance themselves. The helpers come from the process's
// WorkerPool (started once); a concurrent or nested call starts its own threads. worker_count
// keeps problems too small to repay a helper on one thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "core/worker_pool.h"

namespace gdn {

// Least work worth a thread of its own, in state-element updates (K * V per token and head, about
// 6 flops each): some 50-100 us on one core, against tens of microseconds to start a thread.
constexpr double kMinWorkerCost = double(1 << 18);

// Workers for `tasks` tasks of about `task_cost` state-element updates each when `requested`
// threads are asked for (0 = every core): never more than the tasks, and few enough that each
// worker gets at least kMinWorkerCost of work, so tiny problems are not swamped by thread starts.
inline int worker_count(int64_t tasks, int requested, double task_cost = kMinWorkerCost) {
  const int cores = std::max(1, int(std::thread::hardware_concurrency()));
  const double want = requested > 0 ? requested : cores;
  const double worth = std::max(1.0, double(tasks) * task_cost / kMinWorkerCost);
  return int(std::max(1.0, std::min({want, double(tasks), std::floor(worth)})));
}

// Calls fn(task, worker) for every task in [0, tasks) on up to `workers` threads, the caller
// being worker 0. Worker ids are dense (0 .. workers-1) so callers can hand each its own scratch.
// The first exception thrown by fn stops the remaining tasks and is rethrown here.
template <class Fn>
void parallel_for(int64_t tasks, int workers, Fn&& fn) {
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto body = [&](int worker) {
    try {
      for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < tasks;
           i = next.fetch_add(1, std::memory_order_relaxed))
        fn(i, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      next.store(tasks);
    }
  };
  if (workers > 1) {
    const std::function<void(int)> job = [&](int w) { body(w); };
    if (WorkerPool::shared().run(workers - 1, job, [&] { body(0); })) {
      if (error) std::rethrow_exception(error);
      return;
    }
  }
  std::vector<std::thread> threads;
  threads.reserve(std::max(0, workers - 1));
  for (int w = 1; w < workers; ++w) {
    try {
      threads.emplace_back(body, w);
    } catch (const std::system_error&) {
      break;  // out of threads: the ones started (and the caller) share the work
    }
  }
  body(0);
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace gdn

#include "timing/measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>

#include "core/errors.h"

namespace gdn {
namespace {

// A batch of samples should not take much longer than this (keeps the timeout honest).
constexpr double kMaxBatchWallS = 1.0;
constexpr int kMinBatchCap = 32;
// Past kMinBatchCap * kBatchFractionDiv samples the cap grows with the count, so the number of
// stopping checks (each O(n log n)) stays logarithmic for fast kernels with huge sample counts.
constexpr std::size_t kBatchFractionDiv = 16;

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, 0.5);
}

// Per-sample total of each kernel name (a kernel launched twice in a sample counts both), then
// the median over the samples in which the name appears; names keep their first-seen order.
std::vector<KernelStat> kernel_breakdown(const std::vector<Sample>& samples, double median_span) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> per_name;
  for (const auto& s : samples) {
    std::map<std::string, double> totals;
    for (const auto& k : s.kernels) {
      if (!per_name.count(k.name) && !totals.count(k.name)) order.push_back(k.name);
      totals[k.name] += k.seconds;
    }
    for (auto& [name, t] : totals) per_name[name].push_back(t);
  }
  std::vector<KernelStat> out;
  for (const auto& name : order) {
    KernelStat k;
    k.name = name;
    k.median_s = median_of(per_name[name]);
    k.share = median_span > 0 ? k.median_s / median_span : 0.0;
    out.push_back(std::move(k));
  }
  return out;
}

double median_clock(const std::vector<Sample>& samples) {
  std::vector<double> clocks;
  for (const auto& s : samples)
    if (s.sm_clock_mhz > 0) clocks.push_back(s.sm_clock_mhz);
  return clocks.empty() ? 0.0 : median_of(clocks);
}

}  // namespace

bool should_stop(const StoppingRule& rule, const std::vector<double>& samples, double elapsed_wall_s,
                 std::string& reason) {
  const std::size_t n = samples.size();
  if (n == 0) return false;  // a record always gets at least one sample

  if (n >= std::size_t(std::max(rule.min_samples, 1))) {
    const double total = std::accumulate(samples.begin(), samples.end(), 0.0);
    if (total >= rule.min_time_s && compute_stats(samples).noise <= rule.max_noise) {
      reason = "noise";
      return true;
    }
  }
  if (rule.max_samples > 0 && n >= std::size_t(rule.max_samples)) {
    reason = "max_samples";
    return true;
  }
  if (elapsed_wall_s > rule.timeout_s) {
    const std::size_t floor_samples = std::size_t(std::clamp(std::min(3, rule.min_samples), 1, 3));
    const bool one_is_too_long = *std::max_element(samples.begin(), samples.end()) > rule.timeout_s;
    if (n >= floor_samples || one_is_too_long) {
      reason = "timeout";
      return true;
    }
  }
  return false;
}

Measurement measure(Timer& timer, const SampleHooks& hooks, const StoppingRule& rule) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };

  // Warm-up counts against the case's wall-clock cap like the samples do.
  for (int i = 0; i < rule.warmup_runs && elapsed() < rule.timeout_s; ++i) hooks.launch();

  Measurement m;
  std::vector<Sample> all;
  int batch = 1;
  std::string reason;
  while (true) {
    const double batch_start = elapsed();
    auto got = timer.measure(hooks, batch);
    const double batch_wall = elapsed() - batch_start;
    if (got.empty())
      throw runtime_error("timer '" + timer.name() + "' returned no samples for a batch of " + std::to_string(batch));
    for (auto& s : got) {
      m.samples_s.push_back(s.seconds);
      all.push_back(std::move(s));
    }
    const double now = elapsed();
    if (should_stop(rule, m.samples_s, now, reason)) break;

    // Next batch: double, but keep it near kMaxBatchWallS, inside the timeout and max_samples.
    const double per_sample_wall = std::max(batch_wall / double(got.size()), 1e-9);
    const std::size_t n = m.samples_s.size();
    double cap = std::max<double>(kMinBatchCap, double(n / kBatchFractionDiv));
    cap = std::min(cap, std::max(1.0, std::floor(kMaxBatchWallS / per_sample_wall)));
    if (now < rule.timeout_s) cap = std::min(cap, std::max(1.0, std::ceil((rule.timeout_s - now) / per_sample_wall)));
    if (rule.max_samples > 0) cap = std::min(cap, double(std::size_t(rule.max_samples) - std::min(n, std::size_t(rule.max_samples))));
    batch = int(std::max(1.0, std::min(double(batch) * 2, cap)));
  }

  m.stats = compute_stats(m.samples_s);
  m.stop_reason = reason;
  m.max_noise = rule.max_noise;
  m.timeout_s = rule.timeout_s;
  m.converged = reason == "noise";
  m.wall_s = elapsed();
  m.kernels = kernel_breakdown(all, m.stats.median);
  m.sm_clock_mhz = median_clock(all);
  return m;
}

}  // namespace gdn

// The measurement loop: warm-up, then samples until the stopping rule is met (docs/method.md 7).
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "stats/stats.h"
#include "timing/timer.h"

namespace gdn {

struct StoppingRule {
  int warmup_runs = 2;        // untimed launches first (module load, first touch)
  int min_samples = 10;
  int max_samples = 100000;
  double min_time_s = 0.05;   // minimum accumulated measured time
  double max_noise = 0.005;   // target relative noise of the median (Stats::noise)
  double timeout_s = 15.0;    // wall-clock limit per case (warm-up included)

  // CPU variants: a host shares its cores with everything else on it, so a 2-core machine never
  // reaches 0.5 % in any sensible time; host timings get their own target and cap
  // (docs/method.md 7.3 has the measurements behind the numbers).
  static StoppingRule host() {
    StoppingRule r;
    r.max_noise = 0.02;
    r.timeout_s = 3.0;
    return r;
  }
};

// Per-kernel breakdown over all samples: median duration of each kernel name.
struct KernelStat {
  std::string name;
  double median_s = 0;
  double share = 0;  // median_s over the median sample span
};

// One repetition of a case (run --repetitions): its own sample set, summarised.
struct RepetitionStat {
  double median_s = std::numeric_limits<double>::quiet_NaN();
  double noise = std::numeric_limits<double>::quiet_NaN();  // Stats::noise of its samples
  std::size_t n = 0;
  bool converged = false;
};

struct Measurement {
  std::vector<double> samples_s;  // every repetition's samples, in order
  Stats stats;
  bool converged = false;        // noise target met (false: stopped by timeout or max_samples)
  std::string stop_reason;       // "noise", "timeout", "max_samples"
  // The noise target (fraction) and wall-clock cap of the rule that was applied; NaN unknown.
  double max_noise = std::numeric_limits<double>::quiet_NaN();
  double timeout_s = std::numeric_limits<double>::quiet_NaN();
  double wall_s = 0;
  std::vector<KernelStat> kernels;
  double sm_clock_mhz = 0;       // median of the samples' clocks (0 unknown)
  // Median over samples of the summed kernel durations, the host's gaps between a call's kernels
  // left out; recorded by the peer harnesses (scripts/peers), NaN where unknown.
  double kernels_sum_median_s = std::numeric_limits<double>::quiet_NaN();
  // Each repetition's summary when the case was measured more than once (timing/repetitions.h);
  // empty for one. Then stats, converged and wall_s are over all of them together.
  std::vector<RepetitionStat> repetitions;
};

// Pure decision, testable on synthetic data: is sampling finished? Sets reason when it is.
bool should_stop(const StoppingRule& rule, const std::vector<double>& samples, double elapsed_wall_s,
                 std::string& reason);

Measurement measure(Timer& timer, const SampleHooks& hooks, const StoppingRule& rule);

}  // namespace gdn

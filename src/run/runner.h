// The runner: for every case of a sweep and every matching variant, allocate, fill seeded
// inputs, verify against the fp64 reference (outputs poisoned first), then time.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/registry.h"
#include "report/report.h"
#include "run/backend.h"
#include "run/shard.h"
#include "timing/measure.h"

namespace gdn {

struct RunOptions {
  std::optional<OpKind> op;          // --op filter
  std::string variant_glob;          // --variant (ANDed with each case's glob); "" = no filter
  TimingMode mode = TimingMode::cold;
  StoppingRule rule;                                   // GPU variants
  StoppingRule host_rule = StoppingRule::host();       // CPU variants (--host-max-noise, --host-timeout)
  bool verify = true;                // --no-verify turns it off
  bool time = true;                  // verify command: false
  std::optional<uint64_t> seed;      // --seed overrides the config's seeds
  int device = 0;                    // --device
  int threads = 0;                   // CPU worker threads (0 = all cores)
  std::string json_path;             // --json (rewritten after every case)
  std::string resume_path;           // --resume: skip cases this report holds
  bool breakdown = false;            // per-kernel stage table
  bool progress = true;              // progress line on a terminal
  // --isolate: every (point, variant) runs in a child process (this program re-run with
  // child_argv plus --only-point I --json TMP), so a kernel fault or crash is recorded as that
  // case's error and the sweep goes on.
  bool isolate = false;
  std::vector<std::string> child_argv;
  std::optional<std::size_t> only_point;  // run only this index of the expanded plan
  Shard shard;                            // --shard: only the plan entries of this shard
  // --devices: every entry in a child process (child_argv, which holds no --device) on one of
  // these CUDA devices at once (run/devices.h).
  std::vector<int> devices;
  std::string program;  // argv[0], the first word of each record's repro line
  // --repetitions: every timed case is measured this many times, in passes over the whole sweep
  // (a case's repetitions lie a pass apart, so a busy spell of the host reaches few of them);
  // verification runs once, in the first pass. Under --isolate or --devices each case's child repeats it.
  int repetitions = 1;
  // Verification budget: above this many reference state updates (tokens x heads x K x V), a
  // prefill case verifies a deterministic sample of heads.
  double verify_budget = 4.0e10;
};

// Set by the SIGINT handler: finish the current case's bookkeeping, write the report, stop.
extern std::atomic<bool> g_interrupted;

// Verifies one variant on one shape (fresh seeded inputs, poisoned outputs) on a backend.
// Throws on runtime failures (CUDA errors). Used by `run`, `verify` and the GPU tests.
Verification verify_variant(const Variant& v, const Shape& s, ExecBackend& backend, uint64_t seed,
                            std::optional<int> verify_heads = std::nullopt, double verify_budget = 4.0e10);

// Runs the whole sweep; appends records to `report` (and writes it after every case).
// Returns the exit code: 0 ok, 2 a verification failure, 4 a runtime failure.
int run_sweep(const SweepConfig& cfg, const RunOptions& opt, RunReport& report);
// The time now as a report stamps it (UTC, ISO 8601, seconds).
std::string now_iso8601();

}  // namespace gdn

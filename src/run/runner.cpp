#include "run/runner.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fmt/format.h>
#include <set>

#include "config/repro.h"
#include "core/errors.h"
#include "report/report_schema.h"
#include "run/interrupt.h"
#include "run/devices.h"
#include "run/isolate.h"
#include "core/op.h"
#include "run/problem.h"
#include "run/progress.h"
#include "run/verify.h"
#include "run/drift.h"
#include "core/state_quant.h"
#include "timing/repetitions.h"

namespace gdn {

std::atomic<bool> g_interrupted{false};

namespace {

struct PlanItem {
  const CaseSpec* spec;
  Shape shape;
  std::size_t point;  // index of the shape within its case (seeds differ per point)
  const Variant* variant;
};

bool matches_filter(const Variant& v, const std::string& glob) {
  if (glob.empty()) return true;
  auto stem = v.name.substr(v.name.find('/') + 1);
  return glob_match(glob, v.name) || (glob.find('/') == std::string::npos && glob_match(glob, stem));
}

std::vector<PlanItem> make_plan(const SweepConfig& cfg, const RunOptions& opt) {
  std::vector<PlanItem> plan;
  for (auto& c : cfg.cases) {
    if (opt.op && c.op != *opt.op) continue;
    auto variants = Registry::instance().match(c.op, c.variant_glob);
    for (std::size_t i = 0; i < c.shapes.size(); ++i)
      for (auto* v : variants)
        if (matches_filter(*v, opt.variant_glob)) plan.push_back({&c, c.shapes[i], i, v});
  }
  return plan;
}

std::string resume_key(const std::string& variant, const std::string& shape_key, const std::string& mode) {
  return variant + "|" + shape_key + "|" + mode;
}

std::string shard_label(const RunReport& r) {
  return r.shard_count ? fmt::format("{}/{}", r.shard_index, r.shard_count) : std::string("none (the whole sweep)");
}

// Backends are created on first use: a CPU-only sweep never touches CUDA.
class Backends {
 public:
  explicit Backends(const RunOptions& opt) : opt_(opt) {}
  ExecBackend* get(Backend kind, std::string& why) {
    if (kind == Backend::cpu) {
      if (!cpu_) cpu_ = make_cpu_backend(opt_.threads);
      return cpu_.get();
    }
    if (!cuda_tried_) {
      cuda_tried_ = true;
      cuda_ = make_cuda_backend(opt_.device, &cuda_why_);
    }
    why = cuda_why_;
    return cuda_.get();
  }

 private:
  const RunOptions& opt_;
  std::unique_ptr<ExecBackend> cpu_, cuda_;
  bool cuda_tried_ = false;
  std::string cuda_why_;
};

// Who a record is: known before it runs, and what the parent writes when a child leaves none.
void identify(CaseRecord& r, const PlanItem& item, const RunOptions& opt) {
  r.case_name = item.spec->name;
  r.variant = item.variant->name;
  r.origin = item.variant->origin;
  r.shape = item.shape;
  r.mode = std::string(to_string(opt.mode));
  r.seed = opt.seed.value_or(item.spec->seed) + item.point;
  r.threshold_pct = item.spec->threshold_pct;
  r.repro = repro_line({opt.program, opt.time ? "run" : "verify", r.variant, r.shape, r.seed,
                        opt.time ? r.mode : "", item.spec->verify_heads});
}

void time_case(CaseRecord& r, const Variant& v, Problem& p, ExecBackend& backend, const RunOptions& opt) {
  auto timer = backend.make_timer(opt.mode);
  const LaunchContext ctx = backend.launch_context();
  SampleHooks hooks;
  hooks.before = backend.before_sample(opt.mode);
  hooks.launch = [&] { v.launch(p.shape(), p.device(), ctx); };
  backend.throttled_since_last_check();  // reset the flag for this case
  const StoppingRule& rule = backend.kind() == Backend::cpu ? opt.host_rule : opt.rule;
  interrupt::timing_started(rule.timeout_s);
  Measurement m = measure(*timer, hooks, rule);
  // A later repetition joins the record's earlier ones.
  if (r.timed) add_repetition(r.timing, m);
  else r.timing = std::move(m);
  r.timer = timer->name();
  if (!r.timed) r.peak = backend.peak_for(r.work);  // measured once per case (the host's costs a pass of its own)
  r.throttled = (r.timed && r.throttled) || backend.throttled_since_last_check();
  r.timed = true;
  compute_metrics(r);
}

// Runs one (case point, variant). Returns false when the backend is no longer usable (a CUDA
// fault poisons the context), so the sweep must stop.
bool run_one(const PlanItem& item, const RunOptions& opt, Backends& backends, CaseRecord& r) {
  auto t0 = std::chrono::steady_clock::now();
  const Variant& v = *item.variant;
  identify(r, item, opt);
  r.work = op_def(item.shape.op).work(item.shape);
  auto finish = [&](CaseStatus st, std::string reason) {
    r.status = st;
    r.reason = std::move(reason);
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };

  // A variant without knobs runs its default plan only (docs/plans.md); a variant with knobs
  // refuses, in supports, a plan the shape cannot run.
  if (!item.shape.plan.empty() && v.knobs.empty())
    return finish(CaseStatus::skipped, fmt::format("takes no plan (runs its default plan only): plan={}", item.shape.plan)),
           true;
  if (auto why = v.supports(item.shape); !why.empty()) return finish(CaseStatus::skipped, why), true;
  if (v.plan) {
    try {
      r.plan = v.plan(item.shape);
    } catch (const std::exception& e) {  // a plan override that cannot run this shape
      return finish(CaseStatus::error, e.what()), true;
    }
  }
  std::string why;
  ExecBackend* backend = backends.get(v.backend, why);
  if (!backend) return finish(CaseStatus::skipped, why), true;
  r.device = backend->device_name();
  if (auto w = backend->can_run(v); !w.empty()) return finish(CaseStatus::skipped, w), true;
  const uint64_t need = Problem::footprint(item.shape, backend->kind()), have = backend->free_memory();
  if (need > have)
    return finish(CaseStatus::skipped,
                  fmt::format("needs {:.2f} GiB, {:.2f} GiB free", double(need) / (1 << 30), double(have) / (1 << 30))),
           true;
  try {
    Problem p(item.shape, *backend, r.seed, opt.threads);
    if (opt.verify) {
      r.verify = verify_problem(v, p, *backend, item.spec->verify_heads, opt.verify_budget, opt.threads);
      if (!r.verify.pass) return finish(CaseStatus::verify_failed, "verification failed"), true;
      // What an 8-bit pool costs in accuracy over long runs: computed once per format and inputs.
      if (quant::is_8bit(item.shape.state_dtype)) r.drift = cached_drift(item.shape, r.seed);
    }
    if (opt.time) {
      // Timing starts from the generated inputs whether or not verification ran: buffers never
      // uploaded hold whatever the allocator left (all-zero slot indices put every row on one
      // state, which then sits in L2: 64 us instead of 78 for mtp T = 6 B = 64 on an H200).
      p.reset_device();
      time_case(r, v, p, *backend, opt);
    }
    finish(CaseStatus::ok, "");
    return true;
  } catch (const std::exception& e) {
    finish(CaseStatus::error, e.what());
    // Any failure on a CUDA device may have poisoned its context.
    return backend->kind() != Backend::cuda;
  }
}

// One more repetition of a record the first pass timed: fresh seeded inputs, timing only (the
// first pass verified these very inputs). A failure turns the record into an error. Returns false
// when the backend is no longer usable.
bool repeat_one(const PlanItem& item, const RunOptions& opt, Backends& backends, CaseRecord& r, int repetition) {
  auto t0 = std::chrono::steady_clock::now();
  std::string why;
  ExecBackend* backend = backends.get(item.variant->backend, why);
  if (!backend) {
    r.status = CaseStatus::error, r.reason = fmt::format("repetition {}: {}", repetition + 1, why);
    return true;
  }
  try {
    Problem p(item.shape, *backend, r.seed, opt.threads);
    p.reset_device();
    time_case(r, *item.variant, p, *backend, opt);
  } catch (const std::exception& e) {
    r.status = CaseStatus::error, r.reason = fmt::format("repetition {}: {}", repetition + 1, e.what());
    return backend->kind() != Backend::cuda;
  }
  r.wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return true;
}

}  // namespace

std::string now_iso8601() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

int run_sweep(const SweepConfig& cfg, const RunOptions& opt, RunReport& report) {
  auto plan = make_plan(cfg, opt);
  if (plan.empty()) throw input_error(fmt::format("{}: no (case, variant) pair matches the filters", cfg.path));
  // The entries of the plan this process runs: one (an --isolate child), or its shard's.
  std::vector<std::size_t> entries;
  if (opt.only_point) {
    if (*opt.only_point >= plan.size()) throw input_error(fmt::format("--only-point {} is past the plan ({} entries)", *opt.only_point, plan.size()));
    entries = {*opt.only_point};
  } else {
    for (std::size_t i = 0; i < plan.size(); ++i)
      if (opt.shard.holds(i)) entries.push_back(i);
  }
  if (opt.shard.count > 1) report.shard_index = opt.shard.index, report.shard_count = opt.shard.count;

  std::set<std::string> done;
  if (!opt.resume_path.empty()) {
    auto old = load_report(opt.resume_path);
    // Only records of this config, command and mode are kept (a foreign report is refused).
    check_resumable(old, opt.resume_path, cfg.path, cfg.hash, std::string(to_string(opt.mode)));
    if (old.shard_index != report.shard_index || old.shard_count != report.shard_count)
      throw input_error(fmt::format("--resume '{}': it holds shard {}, this run shard {}; resume each shard from its "
                                    "own report",
                                    opt.resume_path, shard_label(old), shard_label(report)));
    // The kept records may come from another machine: its devices stay listed (README: every device seen).
    for (const auto& d : old.devices)
      if (std::none_of(report.devices.begin(), report.devices.end(), [&](const DeviceInfo& e) { return e.uuid == d.uuid; }))
        report.devices.push_back(d);
    for (auto& r : old.cases) {
      if (r.status == CaseStatus::error) continue;  // errors are retried
      // A timed record with fewer repetitions than asked for is run again, whole.
      if (r.timed && repetition_count(r.timing) < std::size_t(opt.repetitions)) continue;
      done.insert(resume_key(r.variant, r.shape_key(), r.mode));
      report.cases.push_back(r);
    }
  }
  if (report.started_at.empty()) report.started_at = now_iso8601();
  auto save = [&] {
    if (!opt.json_path.empty()) write_report(opt.json_path, report);
  };

  std::erase_if(entries, [&](std::size_t i) {
    return done.count(resume_key(plan[i].variant->name, plan[i].shape.key(), std::string(to_string(opt.mode)))) > 0;
  });
  Backends backends(opt);
  // A child (--isolate, --devices) repeats its own case; the parent makes one pass.
  const int passes = opt.isolate || !opt.devices.empty() ? 1 : std::max(opt.repetitions, 1);
  Progress progress(entries.size() * std::size_t(passes), opt.progress);
  bool usable = true, runtime_failure = false, verify_failure = false;
  std::vector<std::optional<std::size_t>> record_of(plan.size());  // plan entry -> its timed record
  auto keep = [&](CaseRecord&& r) {
    runtime_failure = runtime_failure || r.status == CaseStatus::error;
    verify_failure = verify_failure || r.status == CaseStatus::verify_failed;
    report.cases.push_back(std::move(r));
    save();
  };
  if (!opt.devices.empty()) {
    std::vector<DeviceJob> jobs;
    for (std::size_t i : entries) jobs.push_back({i, plan[i].variant->backend == Backend::cpu});
    std::size_t finished = 0;
    const std::size_t first = report.cases.size();
    std::vector<std::size_t> order;  // each new record's plan entry, to put them in plan order at the end
    interrupt::case_started(opt.rule.timeout_s, opt.verify, opt.time);
    progress.update(0, fmt::format("{} entries on {} devices", jobs.size(), opt.devices.size()));
    DeviceQueue q;
    q.child_argv = opt.child_argv;
    q.devices = opt.devices;
    q.identify = [&](const DeviceJob& job, CaseRecord& r) { identify(r, plan[job.entry], opt); };
    q.finished = [&](const DeviceJob& job, CaseRecord&& r) {
      progress.update(++finished, fmt::format("{} {}", plan[job.entry].variant->name, plan[job.entry].shape.key()));
      order.push_back(job.entry);
      keep(std::move(r));
    };
    q.stop = [] { return g_interrupted.load(); };
    run_on_devices(q, jobs);
    interrupt::case_ended();
    std::vector<std::size_t> by_entry(order.size());
    for (std::size_t k = 0; k < by_entry.size(); ++k) by_entry[k] = k;
    std::sort(by_entry.begin(), by_entry.end(), [&](std::size_t x, std::size_t y) { return order[x] < order[y]; });
    std::vector<CaseRecord> sorted;
    for (std::size_t k : by_entry) sorted.push_back(std::move(report.cases[first + k]));
    std::move(sorted.begin(), sorted.end(), report.cases.begin() + std::ptrdiff_t(first));
  }
  for (std::size_t n = 0; opt.devices.empty() && n < entries.size() && usable && !g_interrupted; ++n) {
    const std::size_t i = entries[n];
    const auto& item = plan[i];
    progress.update(n, fmt::format("{}{} {}", passes > 1 ? fmt::format("repetition 1/{}: ", passes) : "",
                                   item.variant->name, item.shape.key()));
    interrupt::case_started((item.variant->backend == Backend::cpu ? opt.host_rule : opt.rule).timeout_s, opt.verify,
                            opt.time);
    CaseRecord r;
    if (opt.isolate) {
      // The parent fills what it knows when the child left no record.
      r = run_isolated(opt.child_argv, i, [&](CaseRecord& err) { identify(err, item, opt); });
    } else {
      usable = run_one(item, opt, backends, r);
    }
    if (r.status == CaseStatus::ok && r.timed) record_of[i] = report.cases.size();
    keep(std::move(r));
    interrupt::case_ended();
  }
  for (int rep = 1; rep < passes && usable && !g_interrupted; ++rep)
    for (std::size_t n = 0; n < entries.size() && usable && !g_interrupted; ++n) {
      const std::size_t i = entries[n];
      if (!record_of[i]) continue;
      const auto& item = plan[i];
      CaseRecord& r = report.cases[*record_of[i]];
      if (r.status != CaseStatus::ok) continue;  // an earlier repetition failed
      progress.update(std::size_t(rep) * entries.size() + n,
                      fmt::format("repetition {}/{}: {} {}", rep + 1, passes, item.variant->name, item.shape.key()));
      interrupt::case_started((item.variant->backend == Backend::cpu ? opt.host_rule : opt.rule).timeout_s, false, true);
      usable = repeat_one(item, opt, backends, r, rep);
      runtime_failure = runtime_failure || r.status == CaseStatus::error;
      save();
      interrupt::case_ended();
    }
  progress.finish();
  // The host's peak depends on the case's size: the calibration keeps the best one seen.
  for (auto& r : report.cases)
    if (r.timed && !r.peak.kind.empty()) {
      auto& slot = report.calibration[r.peak.kind];
      if (!slot.is_number() || slot.get<double>() < r.peak.value) slot = r.peak.value;
    }
  report.complete = usable && !g_interrupted;
  // An interrupted run did not finish: its finished_at stays "" (README, report schema).
  if (!g_interrupted) report.finished_at = now_iso8601();
  save();
  if (runtime_failure) return kExitRuntime;
  if (verify_failure) return kExitVerifyFailed;
  return kExitOk;
}

}  // namespace gdn

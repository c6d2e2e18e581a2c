// `run` (verify, then time) and `verify` (correctness only).
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "cli/commands.h"
#include "cli/option_checks.h"
#include "cli/output_paths.h"
#include "cli/peer_runs.h"
#include "cli/plugin_option.h"
#include "config/adhoc_axes.h"
#include "config/config.h"
#include "core/errors.h"
#include "core/terminal.h"
#include "device/info.h"
#include "plugin/plugin_loader.h"
#include "report/baseline_table.h"
#include "report/harness_origin.h"
#include "report/peer_table.h"
#include "report/report.h"
#include "report/report_lock.h"
#include "run/devices.h"
#include "run/interrupt.h"
#include "run/plan_json.h"
#include "run/runner.h"

namespace gdn::cli {
namespace {

constexpr const char* kDefaultConfig = "configs/default.yaml";
constexpr int kExitInterrupted = 130;  // 128 + SIGINT, as a shell reports it

struct RunArgs {
  std::string config, op, variant = "", json, csv, gbench, bigger, resume, peer_markdown, mode = "cold";
  std::vector<std::string> peers;
  std::vector<std::string> plugins;
  std::string baseline;
  std::vector<std::string> axes;  // -a KEY=VALUES: an ad-hoc sweep, or overrides of --config (config/adhoc_axes.h)
  std::string shard, devices;     // --shard I/N, --devices 0,1,...
  int min_samples = 10, max_samples = 100000, warmup = 2, device = 0, threads = 0, repetitions = 1;
  double max_noise_pct = 0.5, min_time = 0.05, timeout = 15.0;
  double host_max_noise_pct = StoppingRule::host().max_noise * 100, host_timeout = StoppingRule::host().timeout_s;
  bool no_verify = false, breakdown = false, quiet = false, isolate = false;
  int64_t only_point = -1;
  int64_t seed = -1;
  PeerRunArgs peer_run;  // --peers, --kernel, --peers-dir, --python (cli/peer_runs.h)
};

void add_common(CLI::App* cmd, RunArgs& a) {
  cmd->add_option("--config", a.config,
                  fmt::format("Sweep file (YAML or JSON); without it, {} when the working directory has one",
                              kDefaultConfig));
  cmd->add_option("--op", a.op, "Only this op")->check(CLI::IsMember({"prefill", "decode", "mtp"}));
  cmd->add_option("--variant", a.variant, "Only variants matching this glob (e.g. 'decode/*', 'cpu')");
  cmd->add_option("--json", a.json,
                  "Write the JSON report here (rewritten after every case); without it, results go to the terminal only");
  cmd->add_option("--seed", a.seed, "Override every case's seed (by default each case keeps the config's)")
      ->check(CLI::NonNegativeNumber)
      ->default_str("");
  cmd->add_option("--device", a.device, "CUDA device index")->check(CLI::NonNegativeNumber);
  cmd->add_option("--threads", a.threads, "CPU worker threads (0 = all cores)")->check(CLI::NonNegativeNumber);
  add_plugin_option(cmd, a.plugins,
                    "A kernel library implementing include/gdnbench/kernel.h (repeatable): its variants run as "
                    "plugin:<library>/<name> (docs/plugins.md)");
  cmd->add_option("-a,--axis", a.axes,
                  "KEY=VALUE[,VALUE...]: sweep this axis of --op without a config, or set it in every case of "
                  "--config (repeatable; plan values split on ';'), e.g. -a batch=1,8,64 -a heads=16/32")
      ->allow_extra_args(false)
      ->default_str("");
  cmd->add_option("--shard", a.shard, "INDEX/COUNT: only the plan entries whose index % COUNT == INDEX (0-based)")
      ->default_str("");
  cmd->add_option("--devices", a.devices,
                  "CUDA devices to run on at once, e.g. 0,1,2,3: one child process per case, dealt to whichever "
                  "device frees first")
      ->default_str("")
      ->excludes(cmd->get_option("--device"));
  cmd->add_flag("--quiet", a.quiet, "No progress line and no tables");
  cmd->add_flag("--isolate", a.isolate, "Run every case in a child process: a kernel fault is recorded and the sweep goes on");
  // Internal: the child side of --isolate (hidden from --help).
  cmd->add_option("--only-point", a.only_point)->group("");
}

// The parent's command line minus what only the parent does (outputs, resume, peer, isolate).
std::vector<std::string> child_command(const std::vector<std::string>& argv) {
  static const std::vector<std::string> with_value{"--json",   "--csv",  "--gbench",        "--bigger-is-better",
                                                   "--resume", "--peer", "--peer-markdown", "--shard",
                                                   "--devices", "--device", "--peers", "--kernel",
                                                   "--peers-dir", "--python"};
  std::vector<std::string> out;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--isolate") continue;
    bool dropped = false;
    for (auto& opt : with_value) {
      if (a == opt) ++i, dropped = true;
      else if (a.rfind(opt + "=", 0) == 0) dropped = true;
    }
    if (!dropped) out.push_back(a);
  }
  return out;
}

void write_text(const std::string& path, const std::string& text) { write_file_atomic(path, text); }

// --config, or the default sweep when the working directory has it (said on stderr).
std::string config_path(const RunArgs& a, bool child) {
  if (!a.config.empty()) return a.config;
  if (!std::filesystem::exists(kDefaultConfig))
    throw input_error(fmt::format("no --config given, and the working directory has no {}: pass --config FILE",
                                  kDefaultConfig));
  if (!child) fmt::print(stderr, "gdnbench: no --config given: running {}\n", kDefaultConfig);
  return kDefaultConfig;
}

// A device of --devices that this host does not have is refused before anything runs; a host
// without GPUs runs the list anyway (its CUDA variants are skipped with the reason).
void check_device_list(const std::vector<int>& wanted, const std::vector<DeviceInfo>& have) {
  for (int d : wanted)
    if (!have.empty() && std::size_t(d) >= have.size())
      throw input_error(fmt::format("--devices: device {} does not exist; this host has {} CUDA device{} (0 to {})", d,
                                    have.size(), have.size() == 1 ? "" : "s", have.size() - 1));
}

// Each failed case with the command that re-runs it alone.
void print_repro_lines(const std::vector<CaseRecord>& cases) {
  for (const auto& r : cases) {
    if (r.repro.empty() || (r.status != CaseStatus::verify_failed && r.status != CaseStatus::error)) continue;
    fmt::print(stderr, "gdnbench: {} {} {}; re-run it alone:\n  {}\n", r.variant, r.shape_key(),
               r.status == CaseStatus::error ? "failed with an error" : "failed verification", r.repro);
  }
}

int execute(const RunArgs& a, bool time, const std::vector<std::string>& argv) {
  const bool child = a.only_point >= 0;  // an --isolate child: its parent speaks
  interrupt::install(child, !a.json.empty());
  load_plugins(a.plugins);  // before the config: its variant globs match plugin variants too
  // -a alone builds the sweep; with --config it overrides the file's cases.
  const bool adhoc = !a.axes.empty() && a.config.empty();
  const std::string path = adhoc ? "" : config_path(a, child);
  if (a.json.empty() && !child)
    fmt::print(stderr, "gdnbench: no --json: results go to the terminal only; pass --json FILE to keep a report\n");
  // The harnesses --peers and --kernel name: an unknown peer is refused before anything runs.
  const auto harnesses = child ? std::vector<PeerHarness>{} : resolve_harnesses(a.peer_run);
  check_kernels_import(harnesses, a.peer_run.python);
  if (!a.peer_markdown.empty() && a.peers.empty() && harnesses.empty())
    throw input_error("--peer-markdown needs --peer or --peers");
  auto cfg = adhoc ? adhoc_config(a.op, a.axes, a.variant) : a.axes.empty() ? load_config(path)
                                                                             : config_with_axes(path, a.axes);
  // Before any work: no output destroys an input, every output can be written, every peer report
  // loads, and no other run writes the same report.
  std::vector<NamedPath> inputs{{"--config", path}, {"--resume", a.resume}};
  for (const auto& p : a.peers) inputs.push_back({"--peer", p});
  check_output_paths(inputs, {{"--json", a.json},
                              {"--csv", a.csv},
                              {"--gbench", a.gbench},
                              {"--bigger-is-better", a.bigger},
                              {"--peer-markdown", a.peer_markdown}});
  // Every peer report's records together: a peer is known by its variants' prefix.
  std::vector<CaseRecord> peer_cases;
  for (const auto& p : a.peers)
    for (auto& c : load_report(p).cases) peer_cases.push_back(std::move(c));
  // A harness's variant is known once it ran: a --baseline under a harness's name waits for it.
  // A Python kernel's variant is python:<module>/<function> (or the name it declares), not its spec.
  const bool harness_baseline = std::any_of(harnesses.begin(), harnesses.end(), [&](const PeerHarness& h) {
    if (h.judged) return a.baseline.rfind("python:", 0) == 0;
    return a.baseline.rfind(h.fallback_variant.substr(0, h.fallback_variant.rfind('/') + 1), 0) == 0;
  });
  if (auto why = check_baseline(a.baseline, peer_cases); !why.empty() && !harness_baseline) throw input_error(why);
  std::optional<ReportLock> lock;
  if (!a.json.empty()) lock.emplace(a.json);
  RunOptions opt;
  if (!a.op.empty()) opt.op = parse_op(a.op);
  opt.variant_glob = a.variant;
  opt.mode = *parse_timing_mode(a.mode);
  opt.rule.min_samples = a.min_samples;
  opt.rule.max_samples = a.max_samples;
  opt.rule.warmup_runs = a.warmup;
  opt.rule.max_noise = a.max_noise_pct / 100.0;
  opt.rule.min_time_s = a.min_time;
  opt.rule.timeout_s = a.timeout;
  // CPU variants share the flags above except the noise target and the cap, which are their own.
  opt.host_rule = opt.rule;
  opt.host_rule.max_noise = a.host_max_noise_pct / 100.0;
  opt.host_rule.timeout_s = a.host_timeout;
  opt.repetitions = a.repetitions;
  opt.verify = !a.no_verify;
  opt.time = time;
  if (a.seed >= 0) opt.seed = uint64_t(a.seed);
  opt.device = a.device;
  opt.threads = a.threads;
  opt.json_path = a.json;
  opt.resume_path = a.resume;
  opt.breakdown = a.breakdown;
  opt.progress = !a.quiet;
  opt.isolate = a.isolate;
  opt.program = argv.empty() ? "" : argv.front();
  if (!a.shard.empty()) opt.shard = parse_shard(a.shard);
  if (!a.devices.empty()) opt.devices = parse_device_list(a.devices);
  if (a.isolate || !opt.devices.empty()) {
    opt.child_argv = child_command(argv);
    if (a.config.empty() && a.axes.empty()) opt.child_argv.insert(opt.child_argv.end(), {"--config", path});
    // --devices gives each child its device; --isolate's children run on this one.
    if (opt.devices.empty()) opt.child_argv.insert(opt.child_argv.end(), {"--device", std::to_string(a.device)});
  }
  if (a.only_point >= 0) opt.only_point = std::size_t(a.only_point);

  RunReport report;
  report.tool_version = GDN_VERSION;
  report.git_sha = kGitSha;
  report.argv = argv;
  report.command = time ? "run" : "verify";
  report.config_path = cfg.path;
  report.config_hash = cfg.hash;
  report.mode = time ? a.mode : "none";
  report.host = query_host();
  report.devices = query_devices();
  check_device_list(opt.devices, report.devices);

  int rc = run_sweep(cfg, opt, report);
  if (!harnesses.empty() && !g_interrupted) {
    // Until the harnesses are done, the report on disk holds ours and the harnesses done so far, and
    // says so: a run killed inside a peer's harness leaves a report marked incomplete, not one that
    // looks whole.
    const bool ours_complete = report.complete;
    report.complete = false, report.finished_at.clear();
    if (!a.json.empty()) write_report(a.json, report);
    // The peers on the same points (this shard's, this --op's), seeds, mode and stopping rule.
    PlanJsonOptions plan_opt;
    plan_opt.op = opt.op;
    plan_opt.seed = opt.seed;
    plan_opt.shard = opt.shard;
    plan_opt.mode = a.mode;
    plan_opt.rule = opt.rule;
    const int device = opt.devices.empty() ? a.device : opt.devices.front();  // --devices: the harnesses use the first
    // Each harness's records join the report on disk as it ends: a run killed inside a later one
    // keeps them, and --resume runs only what is missing.
    const auto records = run_harnesses(harnesses, plan_json(cfg, plan_opt), a.peer_run, report.cases, device, opt.verify,
                                       [&](const std::vector<CaseRecord>& done) {
                                         report.cases.insert(report.cases.end(), done.begin(), done.end());
                                         if (!a.json.empty()) write_report(a.json, report);
                                       },
                                       harness_work_dir(a.json), !a.resume.empty());
    // A --kernel under test is judged like ours: a runtime failure outranks a failed verification.
    if (const int judged = judged_exit_code(harnesses, records); rc == kExitOk || judged == kExitRuntime)
      rc = std::max(rc, judged);
    report.complete = ours_complete && !g_interrupted;
    if (report.complete) report.finished_at = now_iso8601();
    if (!a.json.empty()) write_report(a.json, report);
  }
  // The harnesses' records stand beside ours as peers; the tables of ours show ours alone.
  std::vector<CaseRecord> ours;
  for (const auto& r : report.cases) {
    if (from_harness(r)) peer_cases.push_back(r);
    else ours.push_back(r);
  }

  const std::size_t width = std::size_t(terminal_columns(STDOUT_FILENO));
  if (!a.quiet) fmt::print("{}", format_tables(ours, a.breakdown, width));
  if (!a.peers.empty() || !harnesses.empty()) {
    fmt::print("{}", format_peer_table(ours, peer_cases, width));
    if (!a.peer_markdown.empty()) write_text(a.peer_markdown, format_peer_markdown(ours, peer_cases));
  }
  if (!a.baseline.empty()) {
    std::vector<CaseRecord> all = ours;
    all.insert(all.end(), peer_cases.begin(), peer_cases.end());
    const std::string table = format_baseline_table(a.baseline, all, width);
    fmt::print("{}", table.empty() ? fmt::format("\n(--baseline {}: no verified, timed record of it)\n", a.baseline) : table);
  }
  if (!child) print_repro_lines(report.cases);
  if (!a.csv.empty()) write_text(a.csv, format_csv(report.cases));
  if (!a.gbench.empty()) write_text(a.gbench, to_gbench(report).dump(2) + "\n");
  if (!a.bigger.empty()) write_text(a.bigger, to_bigger_is_better(report).dump(2) + "\n");

  int ok = 0, skipped = 0, failed = 0, errors = 0;
  for (auto& r : report.cases) {
    ok += r.status == CaseStatus::ok;
    skipped += r.status == CaseStatus::skipped;
    failed += r.status == CaseStatus::verify_failed;
    errors += r.status == CaseStatus::error;
  }
  fmt::print("{} cases: {} ok, {} skipped, {} failed verification, {} errors{}{}\n", report.cases.size(), ok, skipped,
             failed, errors, a.json.empty() ? "" : "; report: " + a.json, report.complete ? "" : " (incomplete)");
  if (g_interrupted) {
    fmt::print(stderr, "gdnbench: interrupted{}\n", a.json.empty() ? "" : "; the report keeps every finished case");
    return kExitInterrupted;
  }
  return rc;
}

}  // namespace

void add_run(CLI::App& app, Action& action, const std::vector<std::string>& argv) {
  static RunArgs a;
  auto* cmd = app.add_subcommand("run", "Verify every matching variant on every sweep point, then time it");
  add_common(cmd, a);
  cmd->add_option("--csv", a.csv, "Also write a CSV view");
  cmd->add_option("--gbench", a.gbench, "Also write a Google-Benchmark-shaped JSON (dashboards)");
  cmd->add_option("--bigger-is-better", a.bigger, "Also write a github-action-benchmark customBiggerIsBetter file");
  cmd->add_option("--mode", a.mode, "cold: L2/LLC flushed before every sample; hot: no flush; graph: CUDA-graph replay")
      ->check(CLI::IsMember({"cold", "hot", "graph"}));
  cmd->add_option("--min-samples", a.min_samples, "Minimum timed samples")->check(CLI::PositiveNumber);
  cmd->add_option("--max-samples", a.max_samples, "Maximum timed samples")->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", a.warmup, "Untimed warm-up launches")->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-noise", a.max_noise_pct, "GPU variants: target relative noise of the median, percent")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--min-time", a.min_time, "Minimum accumulated measured time per case, seconds")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--timeout", a.timeout, "GPU variants: wall-clock limit per case, seconds")->check(CLI::PositiveNumber);
  cmd->add_option("--host-max-noise", a.host_max_noise_pct, "CPU variants: target relative noise of the median, percent")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--host-timeout", a.host_timeout, "CPU variants: wall-clock limit per case, seconds")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--repetitions", a.repetitions,
                  "Measure every case N times, one pass over the sweep each (compare's U-test needs 5 on both "
                  "sides; docs/ci.md)");
  cmd->add_flag("--no-verify", a.no_verify, "Time without verifying first (not recommended)");
  cmd->add_flag("--breakdown", a.breakdown, "Show the per-kernel stage breakdown");
  cmd->add_option("--resume", a.resume, "Skip the cases this report already holds (and keep them)");
  cmd->add_option("--peer", a.peers,
                  "A peer's report (scripts/peers; repeatable): each peer's time beside ours per shape, the best "
                  "peer and ours/best")
      ->allow_extra_args(false)  // one path per --peer, so the --isolate child drops exactly that
      ->default_str("");
  cmd->add_option("--baseline", a.baseline,
                  "Also show this variant against every other at each point (this run's and --peer reports'): "
                  "its time / the fastest other's");
  cmd->add_option("--peer-markdown", a.peer_markdown, "Also write the peer tables as markdown here (needs --peer or --peers)");
  add_peer_run_options(cmd, a.peer_run);
  check_run_flags(cmd);
  cmd->callback([&action, argv] { action = [argv] { return execute(a, true, argv); }; });
}

void add_verify(CLI::App& app, Action& action, const std::vector<std::string>& argv) {
  static RunArgs a;
  auto* cmd = app.add_subcommand("verify", "Correctness only: every matching variant against the fp64 reference");
  add_common(cmd, a);
  check_run_flags(cmd);
  cmd->callback([&action, argv] { action = [argv] { return execute(a, false, argv); }; });
}

}  // namespace gdn::cli

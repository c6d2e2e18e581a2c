// The runner: verification sampling, the sweep loop, report writing and resume.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <vector>

#include "config/config.h"
#include "core/errors.h"
#include "core/registry.h"
#include "report/report.h"
#include "run/inputs.h"
#include "run/runner.h"
#include "run/verify.h"

namespace gdn {
namespace {

std::string tmp(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("gdnbench_runner_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

Shape prefill_shape(int hv, int64_t tokens) {
  Shape s;
  s.op = OpKind::prefill;
  s.h_qk = hv / 2, s.h_v = hv, s.seqlens = {tokens};
  s.layout = Layout::kv;
  return s;
}

TEST(Selection, FullUnderBudgetSampledAbove) {
  std::string scope;
  auto sel = choose_selection(prefill_shape(32, 64), std::nullopt, 4e10, scope);
  EXPECT_TRUE(sel.all());
  EXPECT_EQ(scope, "full");

  // 32 heads x 8192 tokens x 128 x 128 = 4.3e12 updates: a budget of 4 heads' worth samples 4.
  const double per_head = 8192.0 * 128 * 128;
  sel = choose_selection(prefill_shape(32, 8192), std::nullopt, 4 * per_head, scope);
  ASSERT_EQ(sel.heads.size(), 4u);
  EXPECT_EQ(sel.heads.front(), 0);
  EXPECT_EQ(sel.heads.back(), 31);
  EXPECT_NE(scope.find("value heads 0,10,20,31 of 32"), std::string::npos) << scope;

  sel = choose_selection(prefill_shape(32, 64), 2, 4e10, scope);  // verify_heads wins
  EXPECT_EQ(sel.heads, (std::vector<int>{0, 31}));
}

TEST(Selection, VariantTolerancesOnlyTighten) {
  Shape s = prefill_shape(4, 16);
  auto t = effective_tolerances(s, {{"ht", 1e-4}, {"o", 1.0}});
  for (auto& x : t) {
    if (x.tensor == "ht") EXPECT_DOUBLE_EQ(x.rel_l2, 1e-4);
    if (x.tensor == "o") EXPECT_DOUBLE_EQ(x.rel_l2, 5e-3);
  }
}

const char* kSweep = R"(
cases:
  - name: d
    op: decode
    variant: "decode/cpu"
    heads: [2, 4]
    head_dim: 32
    batch: [1, 2, 3]
)";

RunOptions quick(const std::string& json) {
  RunOptions o;
  o.json_path = json;
  o.progress = false;
  o.rule.min_samples = 3;
  o.rule.max_noise = 0.5;
  o.rule.min_time_s = 0;
  o.rule.timeout_s = 2;
  o.host_rule = o.rule;  // these sweeps run CPU variants
  return o;
}

TEST(Runner, SweepVerifiesTimesAndWritesEveryCase) {
  auto cfg = parse_config(kSweep, "sweep.yaml");
  auto json = tmp("sweep.json");
  RunReport report;
  ASSERT_EQ(run_sweep(cfg, quick(json), report), kExitOk);
  auto back = load_report(json);
  ASSERT_EQ(back.cases.size(), 3u);
  EXPECT_TRUE(back.complete);
  for (auto& r : back.cases) {
    EXPECT_EQ(r.status, CaseStatus::ok) << r.reason;
    EXPECT_TRUE(r.verify.pass);
    EXPECT_TRUE(r.timed);
    EXPECT_GT(r.timing.stats.median, 0);
    EXPECT_GT(r.tbps, 0);
    EXPECT_EQ(r.timer, "host");
  }
}

// What `run` puts in a report before the sweep: a resumed report must be of the same config,
// command and mode.
RunReport run_report_of(const SweepConfig& cfg) {
  RunReport r;
  r.command = "run", r.config_path = cfg.path, r.config_hash = cfg.hash, r.mode = "cold";
  return r;
}

TEST(Runner, ResumeKeepsFinishedCasesAndRunsOnlyTheRest) {
  auto cfg = parse_config(kSweep, "sweep.yaml");
  auto first = tmp("first.json");
  RunReport r1 = run_report_of(cfg);
  auto o1 = quick(first);
  o1.variant_glob = "decode/cpu";
  cfg.cases[0].shapes.resize(2);  // a run that stopped after two points
  ASSERT_EQ(run_sweep(cfg, o1, r1), kExitOk);

  auto full = parse_config(kSweep, "sweep.yaml");
  auto second = tmp("second.json");
  auto o2 = quick(second);
  o2.resume_path = first;
  RunReport r2;
  ASSERT_EQ(run_sweep(full, o2, r2), kExitOk);
  ASSERT_EQ(r2.cases.size(), 3u);
  // The first two records are the resumed ones, unchanged.
  EXPECT_EQ(r2.cases[0].timing.samples_s, r1.cases[0].timing.samples_s);
  EXPECT_EQ(r2.cases[1].timing.samples_s, r1.cases[1].timing.samples_s);
  EXPECT_EQ(r2.cases[2].shape.batch, 3);
}

TEST(Runner, ResumeKeepsTheDevicesOfTheResumedReport) {
  // A sweep resumed on another machine: the kept records' device is still listed, once.
  auto cfg = parse_config(kSweep, "sweep.yaml");
  auto first = tmp("devices-first.json");
  RunReport r1 = run_report_of(cfg);
  DeviceInfo earlier;
  earlier.index = 0, earlier.name = "NVIDIA H100 80GB HBM3", earlier.uuid = "GPU-test-earlier";
  r1.devices = {earlier};
  auto o1 = quick(first);
  o1.variant_glob = "decode/cpu";
  cfg.cases[0].shapes.resize(1);
  ASSERT_EQ(run_sweep(cfg, o1, r1), kExitOk);

  DeviceInfo now = earlier;
  now.uuid = "GPU-test-now";
  for (const auto& current : {std::vector<DeviceInfo>{now}, std::vector<DeviceInfo>{earlier}}) {
    auto o2 = quick(tmp("devices-second.json"));
    o2.resume_path = first;
    RunReport r2;
    r2.devices = current;
    ASSERT_EQ(run_sweep(parse_config(kSweep, "sweep.yaml"), o2, r2), kExitOk);
    if (current.front().uuid == now.uuid) {
      ASSERT_EQ(r2.devices.size(), 2u);
      EXPECT_EQ(r2.devices[0].uuid, now.uuid);  // this machine first
      EXPECT_EQ(r2.devices[1].uuid, earlier.uuid);
    } else {
      ASSERT_EQ(r2.devices.size(), 1u);  // the same machine: not listed twice
    }
  }
}

TEST(Runner, BrokenVariantFailsVerificationWithExitTwo) {
  auto cfg = parse_config(R"(
cases:
  - op: decode
    variant: decode/cpu_broken
    heads: [2, 4]
    head_dim: 32
    batch: 2
)",
                          "broken.yaml");
  RunReport report;
  EXPECT_EQ(run_sweep(cfg, quick(""), report), kExitVerifyFailed);
  ASSERT_EQ(report.cases.size(), 1u);
  EXPECT_EQ(report.cases[0].status, CaseStatus::verify_failed);
  EXPECT_FALSE(report.cases[0].timed) << "a failed variant is never timed";
}

// decode/input_probe (this test binary only): counts the launches that found a tensor other than
// the seeded inputs (seed kProbeSeed), without writing anything.
constexpr uint64_t kProbeSeed = 41;
std::atomic<int> g_probe_launches{0}, g_probe_mismatches{0};
const VariantRegistration kInputProbe{Variant{
    "decode/input_probe", OpKind::decode, Backend::cpu, 0, 1000, "test: checks what it is launched on",
    [](const Shape&) { return std::string(); },
    [](const Shape& s, const TensorSet& t, const LaunchContext&) {
      ++g_probe_launches;
      for (const auto& [name, tensor] : t.all()) {
        if (tensor.spec.role == Role::output) continue;
        std::vector<char> want(tensor.spec.bytes());
        fill_input(s, tensor.spec, want.data(), kProbeSeed);
        if (std::memcmp(want.data(), tensor.data, want.size()) != 0) ++g_probe_mismatches;
      }
    },
    {},
    true}};

TEST(Runner, TimingWithoutVerificationRunsOnTheGeneratedInputs) {
  auto cfg = parse_config(R"(
cases:
  - op: decode
    variant: decode/input_probe
    seed: 41
    heads: [2, 4]
    head_dim: 32
    batch: 3
)",
                          "probe.yaml");
  g_probe_launches = 0, g_probe_mismatches = 0;
  RunReport report;
  auto o = quick("");
  o.verify = false;
  ASSERT_EQ(run_sweep(cfg, o, report), kExitOk);
  ASSERT_EQ(report.cases.size(), 1u);
  EXPECT_TRUE(report.cases[0].timed);
  EXPECT_FALSE(report.cases[0].verify.ran);
  EXPECT_GE(g_probe_launches.load(), 3);
  EXPECT_EQ(g_probe_mismatches.load(), 0) << "timed launches saw tensors other than the seeded inputs";
}

TEST(Runner, UnsupportedShapesAreSkippedWithTheReason) {
  // CUDA variants cannot run on this machine (or a GPU machine runs them): either way every
  // record has a status and a skipped one says why.
  auto cfg = parse_config(R"(
cases:
  - op: decode
    variant: "decode/*"
    heads: [2, 4]
    head_dim: 32
    batch: 1
)",
                          "all.yaml");
  RunReport report;
  auto o = quick("");
  o.time = false;
  run_sweep(cfg, o, report);
  for (auto& r : report.cases)
    if (r.status == CaseStatus::skipped) EXPECT_FALSE(r.reason.empty()) << r.variant;
}

}  // namespace
}  // namespace gdn

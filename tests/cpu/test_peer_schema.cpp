// The peer harnesses (scripts/peers/{fla,flashinfer,flashqla}_peer.py) against gdnbench: their
// pure-Python self-test passes, the argument-mapping tests against fake peer modules pass
// (tests/peers/test_peer_mapping.py), and the schema-test report each writes from a plan of
// tests/peers/schema-points.yaml loads with load_report, with the Python key, the plan's work
// model and the Python statistics (the plan's noise estimator) equal to the C++ ones. No GPU,
// torch or peer package needed (python3 only).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/op.h"
#include "report/report.h"
#include "stats/stats.h"

namespace gdn {
namespace {

namespace fs = std::filesystem;

const std::string kPeers = std::string(GDN_SOURCE_DIR) + "/scripts/peers/";
const std::string kScript = kPeers + "fla_peer.py";

// One harness: its script, report tool name, the variant its sample skip names and a word of
// that skip's reason (peerlib/peers.py, PeerDef.sample_skip).
struct Harness {
  std::string script, tool, skip_variant, skip_word;
};
const Harness kHarnesses[] = {
    {"fla_peer.py", "fla", "fla/fused_recurrent", "fp32"},
    {"flashinfer_peer.py", "flashinfer", "flashinfer/chunk", "128"},
    {"flashqla_peer.py", "flashqla", "flashqla/chunk", "128"},
};
void PrintTo(const Harness& h, std::ostream* os) { *os << h.script; }

int run_shell(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

bool have_python() { return run_shell("python3 -c 'import sys; sys.exit(sys.version_info < (3, 8))' >/dev/null 2>&1") == 0; }

std::string temp_file(const std::string& stem) {
  return (fs::temp_directory_path() / (stem + "." + std::to_string(::getpid()))).string();
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void expect_close(double a, double b, const std::string& what) {
  if (std::isinf(a) || std::isinf(b) || std::isnan(a) || std::isnan(b)) {
    EXPECT_TRUE((std::isnan(a) && std::isnan(b)) || a == b) << what << ": " << a << " vs " << b;
    return;
  }
  EXPECT_NEAR(a, b, 1e-12 * std::max(std::abs(a), std::abs(b))) << what;
}

// torch for the tests that need it: the current python3's, else the folder scripts/install-torch.sh
// fills (CI's GDN_TORCH_DEPS), as tests/python-kernel finds it.
const std::string kWithTorch =
    "PYTHONPATH=\"${GDN_TORCH_SITE:-$HOME/.cache/gdnbench/torch-site}${PYTHONPATH:+:$PYTHONPATH}\" ";

// Runs tests/peers/NAME, which prints "N passed, M failed" and exits 0 only when all passed.
void expect_python_test_passes(const std::string& name, const std::string& env = "") {
  const auto log = temp_file(name + ".log");
  const int rc =
      run_shell(env + "python3 '" + std::string(GDN_SOURCE_DIR) + "/tests/peers/" + name + "' > '" + log + "' 2>&1");
  const auto out = read_text(log);
  fs::remove(log);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find(" 0 failed"), std::string::npos) << out;
}

TEST(PeerHarness, MappingAgainstFakePeerModulesPasses) {
  if (!have_python()) GTEST_SKIP() << "python3 (>= 3.8) not found";
  expect_python_test_passes("test_peer_mapping.py");
}

// The torch path (inputs, TorchOps, MappedCall, verification) against numeric stand-ins of the
// peers; needs torch (CI installs it: GDN_TORCH_DEPS).
TEST(PeerHarness, NumericsAgainstStandInPeersPass) {
  if (run_shell(kWithTorch + "python3 -c 'import torch' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "torch is not importable (scripts/install-torch.sh installs it)";
  expect_python_test_passes("test_peer_numerics.py", kWithTorch);
}

TEST(PeerHarness, SelfTestPasses) {
  if (!have_python()) GTEST_SKIP() << "python3 (>= 3.8) not found";
  const auto log = temp_file("fla_peer_selftest.log");
  const int rc = run_shell("python3 '" + kScript + "' --self-test > '" + log + "' 2>&1");
  const auto out = read_text(log);
  fs::remove(log);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find(" 0 failed"), std::string::npos) << out;
}

class SampleReport : public ::testing::TestWithParam<Harness> {
 protected:
  void SetUp() override {
    if (!have_python()) GTEST_SKIP() << "python3 (>= 3.8) not found";
    const auto path = temp_file(GetParam().tool + "_peer_sample.json");
    // The sample report's points, work model and noise estimator are the plan's (gdnbench's).
    const auto plan = temp_file(GetParam().tool + "_peer_sample.plan.json");
    ASSERT_EQ(run_shell(std::string(GDN_BINARY) + " plan --config '" + GDN_SOURCE_DIR + "/tests/peers/schema-points.yaml' --json '" +
                        plan + "'"),
              0);
    const int rc = run_shell("python3 '" + kPeers + GetParam().script + "' --write-sample-report '" + path + "' --plan '" +
                             plan + "'");
    fs::remove(plan);
    ASSERT_EQ(rc, 0) << GetParam().script << " --write-sample-report failed";
    raw_ = nlohmann::json::parse(read_text(path));
    report_ = load_report(path);
    fs::remove(path);
  }
  nlohmann::json raw_;
  RunReport report_;
};

INSTANTIATE_TEST_SUITE_P(Harnesses, SampleReport, ::testing::ValuesIn(kHarnesses),
                         [](const auto& info) { return info.param.tool; });

TEST_P(SampleReport, HeaderRoundTrips) {
  EXPECT_EQ(raw_["tool"]["name"], GetParam().tool);
  EXPECT_EQ(report_.tool_version, "schema-test");
  EXPECT_EQ(report_.command, "peer");
  EXPECT_EQ(report_.mode, "cold");
  EXPECT_TRUE(report_.complete);
  EXPECT_EQ(report_.config_path, "schema-test.yaml");
  EXPECT_FALSE(report_.host.hostname.empty());
  ASSERT_EQ(report_.devices.size(), 1u);
  EXPECT_EQ(report_.devices[0].uuid, "GPU-schema-test");
  EXPECT_EQ(report_.devices[0].arch(), 90);
  EXPECT_EQ(report_.devices[0].l2_bytes, 60ull << 20);
  EXPECT_EQ(report_.devices[0].driver_version, "13.0");
}

TEST_P(SampleReport, ShapesKeysAndWorkMatchTheCpp) {
  ASSERT_EQ(report_.cases.size(), raw_["cases"].size());
  ASSERT_GE(report_.cases.size(), 4u);
  for (std::size_t i = 0; i < report_.cases.size(); ++i) {
    const auto& r = report_.cases[i];
    const auto& j = raw_["cases"][i];
    SCOPED_TRACE(r.case_name);
    EXPECT_EQ(r.op(), j["op"].get<std::string>());
    EXPECT_EQ(r.shape_key(), j["shape_key"].get<std::string>());  // Python's key == Shape::key()
    EXPECT_EQ(to_json(r.shape), j["shape"]);                        // every shape field as the C++ writes it
    EXPECT_EQ(op_def(r.shape.op).validate(r.shape), "");
    const WorkModel w = op_def(r.shape.op).work(r.shape);
    expect_close(r.work.bytes, w.bytes, "bytes");
    expect_close(r.work.flops, w.flops, "flops");
    expect_close(r.work.flops_fi, w.flops_fi, "flops_fi");
    EXPECT_EQ(r.work.bandwidth_bound, w.bandwidth_bound);
  }
}

TEST_P(SampleReport, NothingIsPresentedAsAMeasurement) {
  const auto& skip = report_.cases[0];
  EXPECT_EQ(skip.variant, GetParam().skip_variant);
  EXPECT_EQ(skip.status, CaseStatus::skipped);
  EXPECT_NE(skip.reason.find(GetParam().skip_word), std::string::npos) << skip.reason;
  EXPECT_FALSE(skip.timed);
  for (std::size_t i = 1; i < report_.cases.size(); ++i) {
    const auto& r = report_.cases[i];
    EXPECT_EQ(r.variant, GetParam().tool + "/schema-test");
    EXPECT_EQ(r.status, CaseStatus::skipped);
    EXPECT_EQ(r.reason, "schema test");
    EXPECT_FALSE(r.timed);
    EXPECT_TRUE(std::isnan(r.tbps));
    EXPECT_TRUE(std::isnan(r.tflops));
    // Each record states how it was (or would be) timed.
    EXPECT_EQ(raw_["cases"][i]["timing_method"].get<std::string>().rfind("CUPTI kernel span", 0), 0u);
  }
}

TEST_P(SampleReport, TimingAndVerificationRoundTripWithEqualStatistics) {
  const auto& r = report_.cases[1];
  EXPECT_EQ(r.timer, "cupti-torch-profiler");
  ASSERT_EQ(r.timing.samples_s.size(), 40u);
  EXPECT_TRUE(r.timing.converged);
  EXPECT_EQ(r.timing.stop_reason, "noise");
  // Python's statistics of the samples against compute_stats of the same samples.
  const Stats py = r.timing.stats, cpp = compute_stats(r.timing.samples_s);
  EXPECT_EQ(py.n, cpp.n);
  expect_close(py.min, cpp.min, "min");
  expect_close(py.p10, cpp.p10, "p10");
  expect_close(py.p25, cpp.p25, "p25");
  expect_close(py.median, cpp.median, "median");
  expect_close(py.mean, cpp.mean, "mean");
  expect_close(py.p75, cpp.p75, "p75");
  expect_close(py.p90, cpp.p90, "p90");
  expect_close(py.max, cpp.max, "max");
  expect_close(py.stdev, cpp.stdev, "stdev");
  expect_close(py.rel_stdev, cpp.rel_stdev, "rel_stdev");
  expect_close(py.noise, cpp.noise, "noise");
  ASSERT_EQ(r.timing.kernels.size(), 2u);
  EXPECT_EQ(r.timing.kernels[0].name, "schema_kernel_a");
  EXPECT_NEAR(r.timing.kernels[0].share, 0.6, 1e-9);
  EXPECT_EQ(r.timing.sm_clock_mhz, 1755);
  // The summed kernel time (0.9 of every sample in the schema report), read into the record.
  EXPECT_NEAR(r.timing.kernels_sum_median_s, 0.9 * cpp.median, 1e-12);
  EXPECT_TRUE(r.verify.ran);
  EXPECT_TRUE(r.verify.pass);
  EXPECT_EQ(r.verify.scope, "full");
  ASSERT_EQ(r.verify.checks.size(), 2u);
  EXPECT_EQ(r.verify.checks[0].tensor, "o");
  EXPECT_EQ(r.verify.checks[1].tensor, r.shape.op == OpKind::prefill ? "ht" : "pool");
  EXPECT_DOUBLE_EQ(r.verify.checks[0].rel_l2, 1.5e-3);
}

TEST(PeerHarness, RejectsAFileThatIsNotAPlan) {
  if (!have_python()) GTEST_SKIP() << "python3 (>= 3.8) not found";
  const auto path = temp_file("fla_peer_notaplan.json");
  std::ofstream(path) << "{\"cases\": []}\n";
  const int rc = run_shell("python3 '" + kScript + "' --list --plan '" + path + "' >/dev/null 2>&1");
  fs::remove(path);
  EXPECT_NE(rc, 0);
}

}  // namespace
}  // namespace gdn

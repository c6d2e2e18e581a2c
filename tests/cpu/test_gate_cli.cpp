// The CI gate through the CLI (docs/ci.md): an A/A run of configs/ci.yaml passes, and each of the
// gate's refusals exits 5 until its allow flag is given.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <tuple>
#include <nlohmann/json.hpp>
#include <string>

#include "bounded_child.h"

namespace gdn {
namespace {

using nlohmann::json;
using test::gdnbench;
using test::Scratch;

std::string src(const std::string& rel) { return std::string(GDN_SOURCE_DIR) + "/" + rel; }

json load(const std::string& path) { return json::parse(std::ifstream(path)); }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A run with its sampling cut short for a test's time budget; 5 repetitions are the gate's (docs/ci.md).
std::vector<std::string> run_args(const std::string& config, const std::vector<std::string>& extra,
                                  const std::string& json_out, int repetitions = 5) {
  std::vector<std::string> a{"run", "--config", src(config)};
  a.insert(a.end(), extra.begin(), extra.end());
  a.insert(a.end(), {"--repetitions", std::to_string(repetitions), "--min-samples", "5", "--min-time", "0.02",
                     "--host-timeout", "0.2", "--quiet", "--json", json_out});
  return a;
}

// Two runs of the CI sweep's decode cases (both layouts and pool dtypes, padded rows) from the same
// binary: every case compared, nothing refused, exit 0. CPU times stay ungated without
// --host-threshold, since nothing inside the runs can tell a slower binary from a busier host.
TEST(GateAA, TwoRunsOfTheCiSweepPass) {
  Scratch dir("gate_aa");
  const auto a = dir.path("a.json"), b = dir.path("b.json"), gb = dir.path("b.gbench.json"), bb = dir.path("b.big.json");
  auto r = gdnbench(run_args("configs/ci.yaml", {"--op", "decode"}, a), 300);
  ASSERT_EQ(r.code, 0) << r.out;
  r = gdnbench(run_args("configs/ci.yaml", {"--op", "decode", "--gbench", gb, "--bigger-is-better", bb}, b), 300);
  ASSERT_EQ(r.code, 0) << r.out;

  // Each timed record keeps its five repetitions.
  int timed = 0;
  const json report = load(b), gbench = load(gb), bigger = load(bb);
  for (const auto& c : report["cases"]) {
    if (c["status"] != "ok") continue;
    ++timed;
    ASSERT_EQ(c["timing"]["repetitions"].size(), 5u) << c.dump();
    for (const auto& rep : c["timing"]["repetitions"]) EXPECT_GT(rep["median_s"].get<double>(), 0);
  }
  EXPECT_EQ(timed, 9);  // 2 x 2 x 2 + the padded case, on the CPU variant

  const auto cmp = gdnbench({"compare", a, b});
  EXPECT_EQ(cmp.code, 0) << cmp.out;
  EXPECT_TRUE(has(cmp.out, "PASS")) << cmp.out;
  EXPECT_FALSE(has(cmp.out, "refused")) << cmp.out;
  EXPECT_FALSE(has(cmp.out, "missing")) << cmp.out;
  EXPECT_TRUE(has(cmp.out, "5 vs 5 repetitions")) << "decided by the U test\n" << cmp.out;

  // The exports name the device, so two GPU models never share a dashboard series.
  for (const auto& e : gbench["benchmarks"]) {
    const auto name = e["name"].get<std::string>();
    EXPECT_TRUE(has(name, "/cold@host: ")) << name;
    EXPECT_EQ(e["repetitions"], 5) << e.dump();
  }
  EXPECT_EQ(gbench["benchmarks"].size(), 9u);
  EXPECT_EQ(bigger.size(), 9u);
  for (const auto& e : bigger) EXPECT_TRUE(has(e["name"].get<std::string>(), "/cold@host: ")) << e.dump();
}

std::vector<std::size_t> repetition_counts(const std::string& path) {
  std::vector<std::size_t> out;
  const json report = load(path);
  for (const auto& c : report["cases"])
    out.push_back(c["timing"].is_object() ? c["timing"].value("repetitions", json::array()).size() : 0);
  return out;
}

TEST(GateRepetitions, IsolatedChildrenRepeatAndResumeCompletesTheCount) {
  Scratch dir("gate_reps");
  const std::vector<std::string> decode_cpu{"--op", "decode", "--variant", "decode/cpu"};
  // Under --isolate each case's child runs its repetitions.
  const auto iso = dir.path("iso.json");
  auto with_isolate = decode_cpu;
  with_isolate.push_back("--isolate");
  auto r = gdnbench(run_args("tests/data/tiny.yaml", with_isolate, iso, 3), 120);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(repetition_counts(iso), std::vector<std::size_t>(4, 3));
  // A report of one repetition resumed with two: every record is measured again, twice.
  const auto res = dir.path("res.json");
  r = gdnbench(run_args("tests/data/tiny.yaml", decode_cpu, res, 1), 120);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(repetition_counts(res), std::vector<std::size_t>(4, 0));  // one repetition writes no list
  auto resume = decode_cpu;
  resume.insert(resume.end(), {"--resume", res});
  r = gdnbench(run_args("tests/data/tiny.yaml", resume, res, 2), 120);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(repetition_counts(res), std::vector<std::size_t>(4, 2));
}

// One quick run of the tiny sweep, then copies of its report with one thing wrong each.
class GateRefusals : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new Scratch("gate_refusals");
    base_ = dir_->path("base.json");
    const auto r = gdnbench(run_args("tests/data/tiny.yaml", {"--op", "decode"}, base_, 1), 120);
    ASSERT_EQ(r.code, 0) << r.out;
  }
  static void TearDownTestSuite() { delete dir_; }

  static std::string variant(const std::string& name, const std::function<void(json&)>& edit) {
    json j = load(base_);
    edit(j);
    return dir_->put(name, j.dump());
  }

  static Scratch* dir_;
  static std::string base_;
};

Scratch* GateRefusals::dir_ = nullptr;
std::string GateRefusals::base_;

TEST_F(GateRefusals, SameReportPasses) {
  const auto r = gdnbench({"compare", base_, base_});
  EXPECT_EQ(r.code, 0) << r.out;
}

TEST_F(GateRefusals, MissingCasesExitFiveUnlessAllowed) {
  const auto fewer = variant("fewer.json", [](json& j) { j["cases"].erase(j["cases"].begin()); });
  auto r = gdnbench({"compare", base_, fewer});
  EXPECT_EQ(r.code, 5) << r.out;
  EXPECT_TRUE(has(r.out, "refused: 1 case of BASE has no time in NEW")) << r.out;
  r = gdnbench({"compare", base_, fewer, "--allow-missing"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "allowed: 1 case of BASE")) << r.out;
}

TEST_F(GateRefusals, IncompleteReportExitsFiveUnlessAllowed) {
  const auto cut = variant("cut.json", [](json& j) { j["complete"] = false; });
  for (const auto& [base, next, side] : {std::tuple{base_, cut, "NEW"}, std::tuple{cut, base_, "BASE"}}) {
    auto r = gdnbench({"compare", base, next});
    EXPECT_EQ(r.code, 5) << r.out;
    EXPECT_TRUE(has(r.out, std::string("refused: ") + side + " is incomplete")) << r.out;
    r = gdnbench({"compare", base, next, "--allow-incomplete"});
    EXPECT_EQ(r.code, 0) << r.out;
  }
}

TEST_F(GateRefusals, DeviceChangeExitsFiveUnlessAllowed) {
  const auto moved = variant("moved.json", [](json& j) {
    for (auto& c : j["cases"]) c["device"] = "host: Another CPU";
  });
  auto r = gdnbench({"compare", base_, moved});
  EXPECT_EQ(r.code, 5) << r.out;
  EXPECT_TRUE(has(r.out, "device change")) << r.out;
  EXPECT_TRUE(has(r.out, "NEW on host: Another CPU")) << r.out;
  r = gdnbench({"compare", base_, moved, "--allow-device-change"});
  EXPECT_EQ(r.code, 0) << r.out;  // matched across the devices, every case compared
  EXPECT_TRUE(has(r.out, "-> host: Another CPU")) << r.out;
  EXPECT_FALSE(has(r.out, "missing")) << r.out;
}

TEST_F(GateRefusals, NothingComparedExitsFiveWhateverIsAllowed) {
  const auto empty = variant("empty.json", [](json& j) { j["cases"] = json::array(); });
  const auto r = gdnbench({"compare", base_, empty, "--allow-missing", "--allow-incomplete", "--allow-device-change"});
  EXPECT_EQ(r.code, 5) << r.out;
  EXPECT_TRUE(has(r.out, "nothing compared")) << r.out;
}

TEST_F(GateRefusals, TheGpuBaselineAgainstACpuRunExitsFive) {
  // The committed H200 baseline (GPU and CPU cases) against this CPU-only run.
  const auto r = gdnbench({"compare", src("results/h200/ci.json"), base_});
  EXPECT_EQ(r.code, 5) << r.out;
  EXPECT_TRUE(has(r.out, "device change: BASE ran on NVIDIA H200")) << r.out;
}

TEST_F(GateRefusals, FlagValuesAreChecked) {
  for (const char* bad : {"0", "-5", "nan", "inf", "x"})
    EXPECT_EQ(gdnbench({"compare", base_, base_, "--host-threshold", bad}).code, 3) << bad;
  EXPECT_EQ(gdnbench({"compare", base_, base_, "--host-threshold", "25"}).code, 0);
  for (const char* bad : {"0", "-1", "1.5", "1001", "many"}) {
    const auto r = gdnbench({"run", "--config", src("tests/data/tiny.yaml"), "--repetitions", bad, "--quiet"});
    EXPECT_EQ(r.code, 3) << bad << ": " << r.out;
    EXPECT_TRUE(has(r.out, "--repetitions")) << r.out;
  }
}

}  // namespace
}  // namespace gdn

// The real binary's exit codes and messages (README "Exit codes"): GDN_BINARY is gdnbench-testing,
// the shipped CLI with the test-only variants; GDN_PRODUCT_BINARY is the shipped gdnbench.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.h"

namespace {

using Result = gdn::test::ShellResult;

Result run(const std::string& args, const char* binary = GDN_BINARY) {
  return gdn::test::run_shell(std::string(binary) + " " + args + " 2>&1");
}

std::string src(const std::string& rel) { return std::string(GDN_SOURCE_DIR) + "/" + rel; }

std::string tmp(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("gdnbench_cli_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::string write(const std::string& name, const std::string& text) {
  auto path = tmp(name);
  std::ofstream(path) << text;
  return path;
}

TEST(Cli, HelpOnEverySubcommandExitsZero) {
  for (const char* sub : {"", "run", "verify", "list", "plan", "compare", "info", "calibrate", "dashboard"}) {
    auto r = run(std::string(sub) + " --help");
    EXPECT_EQ(r.code, 0) << sub << "\n" << r.out;
    EXPECT_NE(r.out.find("--help"), std::string::npos) << sub;
  }
}

TEST(Cli, UsageErrorsExitThree) {
  EXPECT_EQ(run("").code, 3);
  EXPECT_EQ(run("frobnicate").code, 3);
  EXPECT_EQ(run("run").code, 3);  // no --config, and no configs/default.yaml where the tests run
  EXPECT_EQ(run("run --config x.yaml --mode lukewarm").code, 3);
}

TEST(Cli, BadConfigsExitThreeAndNameFileKeyValue) {
  auto missing = run("verify --config /nonexistent/sweep.yaml");
  EXPECT_EQ(missing.code, 3);
  EXPECT_NE(missing.out.find("/nonexistent/sweep.yaml"), std::string::npos) << missing.out;

  auto syntax = write("syntax.yaml", "cases:\n  - op: decode\n    batch: [1, 2\n");
  auto r = run("verify --config " + syntax);
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("syntax.yaml:"), std::string::npos) << r.out;

  auto unknown = write("unknown.yaml", "cases:\n  - op: decode\n    batchsize: 4\n");
  r = run("verify --config " + unknown);
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("batchsize"), std::string::npos) << r.out;

  auto heads = write("heads.yaml", "cases:\n  - op: decode\n    heads: [16, 24]\n");
  r = run("verify --config " + heads);
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("heads"), std::string::npos) << r.out;
}

TEST(Cli, ListShowsCpuVariantsRunnableHere) {
  auto r = run("list");
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* v : {"prefill/cpu", "decode/cpu", "mtp/cpu"}) EXPECT_NE(r.out.find(v), std::string::npos) << v;
  EXPECT_EQ(r.out.find("decode/cpu_broken"), std::string::npos) << "test-only variants are hidden without --all";
  EXPECT_NE(run("list --all").out.find("decode/cpu_broken"), std::string::npos);
}

TEST(Cli, ShippedBinaryCarriesNoTestOnlyVariant) {
  auto r = run("list --all", GDN_PRODUCT_BINARY);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("decode/cpu"), std::string::npos) << r.out;
  for (const char* v : {"decode/cpu_broken", "decode/cpu_crash", "decode/broken", "TEST ONLY"})
    EXPECT_EQ(r.out.find(v), std::string::npos) << v << " is test-only\n" << r.out;
}

TEST(Cli, VerifyTinySweepPassesAndWritesReport) {
  auto json = tmp("verify.json");
  auto r = run("verify --quiet --config " + src("tests/data/tiny.yaml") + " --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(std::ifstream(json));
  EXPECT_EQ(j["command"], "verify");
  EXPECT_TRUE(j["complete"].get<bool>());
  ASSERT_GT(j["cases"].size(), 0u);
  for (auto& c : j["cases"]) {
    EXPECT_EQ(c["status"], "ok") << c.dump();
    EXPECT_TRUE(c["verification"]["pass"].get<bool>()) << c.dump();
  }
}

TEST(Cli, BrokenVariantFailsVerifyWithExitTwo) {
  auto r = run("verify --quiet --config " + src("tests/data/broken.yaml"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("1 failed verification"), std::string::npos) << r.out;
}

TEST(Cli, RunThenCompareSameReportIsCleanAndRegressionExitsOne) {
  auto base = tmp("base.json");
  auto r = run("run --quiet --config " + src("tests/data/tiny.yaml") + " --op decode --min-samples 5 --host-max-noise 5 "
               "--host-timeout 2 --json " + base);
  ASSERT_EQ(r.code, 0) << r.out;
  r = run("compare " + base + " " + base);
  EXPECT_EQ(r.code, 0) << r.out;

  // The same report with every median tripled is a regression.
  auto j = nlohmann::json::parse(std::ifstream(base));
  for (auto& c : j["cases"]) {
    if (c["status"] != "ok") continue;
    auto& t = c["timing"];
    for (auto* k : {"min", "p10", "p25", "median", "mean", "p75", "p90", "max"}) t["stats"][k] = t["stats"][k].get<double>() * 3;
    for (auto& s : t["samples_s"]) s = s.get<double>() * 3;
  }
  auto slow = write("slow.json", j.dump());
  // CPU times fail the gate only with --host-threshold (docs/ci.md "CPU timings").
  r = run("compare " + base + " " + slow + " --markdown");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("CPU time, not gated"), std::string::npos) << r.out;
  r = run("compare " + base + " " + slow + " --markdown --host-threshold 50");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("slower"), std::string::npos) << r.out;
  EXPECT_EQ(run("compare " + base + " /nonexistent.json").code, 3);
}

TEST(Cli, IsolateRecordsACrashingCaseAndFinishesTheSweep) {
  auto json = tmp("isolate.json");
  auto r = run("run --quiet --isolate --min-samples 3 --host-max-noise 50 --host-timeout 1 --config " +
               src("tests/data/crash.yaml") + " --json " + json);
  EXPECT_EQ(r.code, 4) << r.out;
  auto j = nlohmann::json::parse(std::ifstream(json));
  ASSERT_EQ(j["cases"].size(), 3u) << j.dump();
  EXPECT_EQ(j["cases"][0]["status"], "ok");
  EXPECT_EQ(j["cases"][1]["status"], "error");
  EXPECT_EQ(j["cases"][1]["variant"], "decode/cpu_crash");
  EXPECT_NE(j["cases"][1]["reason"].get<std::string>().find("signal"), std::string::npos) << j["cases"][1].dump();
  EXPECT_EQ(j["cases"][2]["status"], "ok") << "the sweep goes on after the crash";
}

}  // namespace

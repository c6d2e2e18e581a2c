// `gdnbench run --peers` and `--kernel` end to end on the CPU, with the stand-in harnesses of
// tests/peers/fake_harnesses (what each one does is said there): one report with ours and every
// harness's records, skip records for a peer that cannot be imported, error records after a
// harness that dies, exit 3 for an unknown peer, --resume and --shard. And the plan JSON's work
// model and tolerances against the records of a CPU run: the contract the harnesses read is the
// one the engine uses.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "dashboard/dashboard_data.h"
#include "report/harness_origin.h"
#include "report/report.h"
#include "test_support.h"

namespace {

using gdn::test::contains;
using nlohmann::json;
namespace fs = std::filesystem;

const std::string kFakes = std::string(GDN_SOURCE_DIR) + "/tests/peers/fake_harnesses";
const std::string kTiny = std::string(GDN_SOURCE_DIR) + "/tests/data/tiny.yaml";
// Quick CPU timing: the harnesses' records, not our numbers, are under test.
const std::string kQuick = " --min-samples 5 --min-time 0 --host-timeout 0.2 --warmup 0";

bool have_python() { return gdn::test::run_shell("python3 -c 'import sys' >/dev/null 2>&1").code == 0; }

gdn::test::ShellResult run(const std::string& args) {
  return gdn::test::run_shell(std::string(GDN_BINARY) + " " + args + " 2>&1");
}

std::string tmp(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("gdnbench_run_peers_" + std::to_string(getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// The decode points of tiny.yaml, as `plan --json` lists them.
std::vector<json> decode_points() {
  const auto path = tmp("tiny.plan.json");
  EXPECT_EQ(run("plan --config " + kTiny + " --json " + path).code, 0);
  const json plan = read_json(path);
  std::vector<json> out;
  for (const auto& p : plan["points"])
    if (p["op"] == "decode") out.push_back(p);
  return out;
}

std::vector<const gdn::CaseRecord*> of_variant(const gdn::RunReport& r, const std::string& variant) {
  std::vector<const gdn::CaseRecord*> out;
  for (const auto& c : r.cases)
    if (c.variant == variant) out.push_back(&c);
  return out;
}

class RunPeers : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_python()) GTEST_SKIP() << "python3 not found";
  }
};

// A run killed while a harness runs (a job's time limit) leaves ours on disk, marked incomplete:
// the report does not look whole without the peers it was asked for, and --resume goes on.
TEST_F(RunPeers, AReportKilledInsideAHarnessSaysItIsIncomplete) {
  const auto out = tmp("killed.json");
  const auto r = gdn::test::run_shell("FAKE_HARNESS_KILLS_GDNBENCH=1 " + std::string(GDN_BINARY) + " run --config " + kTiny +
                                      " --op decode --peers fla --peers-dir " + kFakes + " --json " + out + kQuick + " 2>&1");
  EXPECT_NE(r.code, 0) << r.out;
  const auto rep = gdn::load_report(out);
  EXPECT_FALSE(rep.complete);
  EXPECT_TRUE(rep.finished_at.empty());
  std::size_t ours = 0;
  for (const auto& c : rep.cases) ours += c.origin.kind.empty();
  EXPECT_GE(ours, decode_points().size()) << "ours was written before the harness ran";
  EXPECT_TRUE(of_variant(rep, "fla/fake").empty());

  const auto resumed = run("run --config " + kTiny + " --op decode --peers fla --peers-dir " + kFakes + " --json " + out +
                           " --resume " + out + kQuick);
  ASSERT_EQ(resumed.code, 0) << resumed.out;
  const auto whole = gdn::load_report(out);
  EXPECT_TRUE(whole.complete);
  EXPECT_FALSE(whole.finished_at.empty());
  EXPECT_EQ(of_variant(whole, "fla/fake").size(), decode_points().size());
}

// Killed inside the second harness, the run keeps the first one's records on disk; --resume runs
// only the harness that did not finish.
TEST_F(RunPeers, AHarnessThatFinishedKeepsItsRecordsWhenALaterOneIsKilled) {
  const auto out = tmp("killed-second.json");
  const auto r = gdn::test::run_shell("FAKE_HARNESS_KILLS_GDNBENCH=flashinfer " + std::string(GDN_BINARY) + " run --config " +
                                      kTiny + " --op decode --peers fla,flashinfer --peers-dir " + kFakes + " --json " + out +
                                      kQuick + " 2>&1");
  EXPECT_NE(r.code, 0) << r.out;
  const auto rep = gdn::load_report(out);
  EXPECT_FALSE(rep.complete);
  EXPECT_EQ(of_variant(rep, "fla/fake").size(), decode_points().size()) << "the first harness's records were written";
  EXPECT_TRUE(of_variant(rep, "flashinfer/fake").empty());

  const auto resumed = run("run --config " + kTiny + " --op decode --peers fla,flashinfer --peers-dir " + kFakes + " --json " +
                           out + " --resume " + out + kQuick);
  const auto whole = gdn::load_report(out);
  EXPECT_EQ(of_variant(whole, "fla/fake").size(), decode_points().size()) << "fla's points were not run again";
  EXPECT_FALSE(of_variant(whole, "flashinfer/fake").empty()) << resumed.out;
}

// Killed while a harness runs, the run leaves that harness's own report beside its --json
// (<json>.peers/); --resume of the same report lets the harness keep those records and run only the
// other points, then removes the folder. A run without --resume starts the harness afresh.
TEST_F(RunPeers, AKilledHarnessGoesOnFromItsOwnRecordsUnderResume) {
  const auto points = decode_points();
  ASSERT_GE(points.size(), 3u);
  const auto out = tmp("killed-midway.json");
  const std::string peers_dir = out + ".peers", left = peers_dir + "/fla_peer.report.json";
  const std::string cmd = std::string(GDN_BINARY) + " run --config " + kTiny + " --op decode --peers fla --peers-dir " + kFakes +
                          " --json " + out + kQuick;
  const auto r = gdn::test::run_shell("FAKE_HARNESS_KILLS_GDNBENCH_AFTER=2 " + cmd + " 2>&1");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_TRUE(of_variant(gdn::load_report(out), "fla/fake").empty());
  ASSERT_TRUE(std::filesystem::exists(left)) << r.out;
  EXPECT_EQ(read_json(left)["cases"].size(), 2u);

  const auto resumed = gdn::test::run_shell(cmd + " --resume " + out + " 2>&1");
  ASSERT_EQ(resumed.code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("2 records kept"), std::string::npos) << resumed.out;
  const auto whole = gdn::load_report(out);
  EXPECT_TRUE(whole.complete);
  EXPECT_EQ(of_variant(whole, "fla/fake").size(), points.size());
  EXPECT_FALSE(std::filesystem::exists(peers_dir)) << "the folder goes once every harness has ended";

  // Killed again, then run without --resume: the leftover report is not adopted.
  gdn::test::run_shell("FAKE_HARNESS_KILLS_GDNBENCH_AFTER=1 " + cmd + " 2>&1");
  ASSERT_TRUE(std::filesystem::exists(left));
  const auto fresh = gdn::test::run_shell(cmd + " 2>&1");
  ASSERT_EQ(fresh.code, 0) << fresh.out;
  EXPECT_NE(fresh.out.find("0 records kept"), std::string::npos) << fresh.out;
  EXPECT_EQ(of_variant(gdn::load_report(out), "fla/fake").size(), points.size());
}

TEST_F(RunPeers, OneReportHoldsOursAndEveryHarnessWithSkipsAndErrors) {
  const auto points = decode_points();
  ASSERT_GE(points.size(), 2u);
  const auto out = tmp("all.json");
  const auto r = run("run --config " + kTiny + " --op decode --peers fla,flashqla,flashinfer --peers-dir " + kFakes +
                     " --json " + out + kQuick);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "fla_peer: " + std::to_string(points.size()) + " points")) << "harness progress: " << r.out;
  const auto rep = gdn::load_report(out);
  EXPECT_TRUE(rep.complete);

  // Ours: every decode point's CPU variants.
  std::size_t ours = 0;
  for (const auto& c : rep.cases) ours += c.origin.kind.empty();
  EXPECT_GE(ours, points.size());

  // fla: a timed record per point, its statistics gdnbench's own from the samples (the fake wrote
  // a median of 1 s), its work model ours.
  const auto fla = of_variant(rep, "fla/fake");
  ASSERT_EQ(fla.size(), points.size());
  for (const auto* c : fla) {
    EXPECT_EQ(c->status, gdn::CaseStatus::ok);
    EXPECT_EQ(c->origin.kind, "harness");
    EXPECT_EQ(c->origin.path, "fla");
    EXPECT_NEAR(c->timing.stats.median, 2e-5, 1e-8) << "statistics recomputed from the samples";
    EXPECT_EQ(c->timing.stats.n, 5u) << "the run's --min-samples reached the harness through the plan";
    EXPECT_EQ(c->mode, "cold");
    for (const auto& o : rep.cases)
      if (o.origin.kind.empty() && o.shape_key() == c->shape_key()) {
        EXPECT_EQ(c->work.bytes, o.work.bytes) << c->shape_key();
        EXPECT_EQ(c->work.flops, o.work.flops) << c->shape_key();
      }
    EXPECT_NEAR(c->tbps, c->work.bytes / c->timing.stats.median / 1e12, 1e-9);
  }

  // flashqla cannot be imported: a skip per point saying why.
  const auto qla = of_variant(rep, "flashqla/harness");
  ASSERT_EQ(qla.size(), points.size());
  for (const auto* c : qla) {
    EXPECT_EQ(c->status, gdn::CaseStatus::skipped);
    EXPECT_TRUE(contains(c->reason, "not importable")) << c->reason;
    EXPECT_TRUE(contains(c->reason, "No module named 'flashqla'")) << c->reason;
  }

  // flashinfer died in its second point: its first record, then an error per point left.
  ASSERT_EQ(of_variant(rep, "flashinfer/fake").size(), 1u);
  const auto crashed = of_variant(rep, "flashinfer/harness");
  ASSERT_EQ(crashed.size(), points.size() - 1);
  for (const auto* c : crashed) {
    EXPECT_EQ(c->status, gdn::CaseStatus::error);
    EXPECT_TRUE(contains(c->reason, "exited with code 1")) << c->reason;
    EXPECT_TRUE(contains(c->reason, "fake harness crash in the second point")) << c->reason;
  }
  std::set<std::string> keys;
  for (const auto* c : crashed) keys.insert(c->shape_key());
  EXPECT_FALSE(keys.count(of_variant(rep, "flashinfer/fake")[0]->shape_key()));
}

// A sweep from -a axes, with --seed and --mode: the harness gets those points, seeds and mode.
TEST_F(RunPeers, AdHocAxesSeedAndModeReachTheHarness) {
  const auto out = tmp("adhoc.json");
  const auto r = run("run --op decode -a batch=1,2 -a heads=2/4 -a head_dim=32 --variant '*cpu' --seed 42 --mode hot "
                     "--peers fla --peers-dir " + kFakes + " --json " + out + kQuick);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto rep = gdn::load_report(out);
  const auto fla = of_variant(rep, "fla/fake");
  ASSERT_EQ(fla.size(), 2u);
  std::set<std::string> ours;
  for (const auto& c : rep.cases)
    if (c.origin.kind.empty()) ours.insert(c.shape_key() + " seed " + std::to_string(c.seed) + " " + c.mode);
  for (const auto* c : fla) {
    EXPECT_EQ(c->mode, "hot");
    EXPECT_TRUE(ours.count(c->shape_key() + " seed " + std::to_string(c->seed) + " " + c->mode))
        << "the peer ran our point with our seed: " << c->shape_key() << " seed " << c->seed;
  }
}

TEST_F(RunPeers, UnknownPeerIsExitThreeNamingTheKnownOnes) {
  const auto r = run("run --config " + kTiny + " --peers fla,flashattn --peers-dir " + kFakes);
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_TRUE(contains(r.out, "unknown peer 'flashattn'")) << r.out;
  EXPECT_TRUE(contains(r.out, "fla, flashinfer, flashqla")) << r.out;
  const auto k = run("run --config " + kTiny + " --kernel nocolon --peers-dir " + kFakes);
  EXPECT_EQ(k.code, 3) << k.out;
  EXPECT_TRUE(contains(k.out, "MODULE:FUNCTION")) << k.out;
  const auto d = run("run --config " + kTiny + " --peers fla --peers-dir " + tmp("no-such-dir"));
  EXPECT_EQ(d.code, 3) << d.out;
  EXPECT_TRUE(contains(d.out, "fla_peer.py")) << d.out;
}

// A packed binary (no scripts/peers beside it) run from a folder that holds scripts/peers finds the
// harnesses there; run from elsewhere it is exit 3, naming both places it looked.
TEST_F(RunPeers, APackedBinaryFindsTheHarnessesInTheCurrentFolder) {
  const fs::path packed = tmp("packed/bin/gdnbench");
  fs::create_directories(packed.parent_path());
  fs::copy_file(GDN_BINARY, packed, fs::copy_options::overwrite_existing);
  const fs::path repo = tmp("repo");
  fs::create_directories(repo / "scripts");
  std::error_code ec;
  fs::create_directory_symlink(kFakes, repo / "scripts" / "peers", ec);
  const auto out = tmp("packed.json");
  const std::string args = " run --config " + kTiny + " --op decode --variant '*cpu' --peers fla --json " + out + kQuick;
  const auto r = gdn::test::run_shell("cd " + repo.string() + " && " + packed.string() + args + " 2>&1");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(of_variant(gdn::load_report(out), "fla/fake").empty()) << r.out;
  const auto away = gdn::test::run_shell("cd " + tmp("") + " && " + packed.string() + args + " 2>&1");
  EXPECT_EQ(away.code, 3) << away.out;
  EXPECT_TRUE(contains(away.out, (packed.parent_path().parent_path() / "scripts" / "peers").string())) << away.out;
  EXPECT_TRUE(contains(away.out, "the current folder")) << away.out;
}

// --peers fla:chunk hands the harness --variants fla/chunk (the fake names its records after it);
// an empty variant is exit 3.
TEST_F(RunPeers, APeerCanBeLimitedToSomeOfItsVariants) {
  const auto out = tmp("variants.json");
  const auto r = run("run --config " + kTiny + " --op decode --variant '*cpu' --peers fla:chunk --peers-dir " + kFakes +
                     " --json " + out + kQuick);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto rep = gdn::load_report(out);
  EXPECT_FALSE(of_variant(rep, "fla/chunk").empty()) << r.out;
  EXPECT_TRUE(of_variant(rep, "fla/fake").empty()) << r.out;
  const auto bad = run("run --config " + kTiny + " --peers 'fla:chunk+' --peers-dir " + kFakes);
  EXPECT_EQ(bad.code, 3) << bad.out;
  EXPECT_TRUE(contains(bad.out, "an empty variant")) << bad.out;
}

TEST_F(RunPeers, MissingInterpreterGivesSkipsAndTheRunGoesOn) {
  const auto out = tmp("nopython.json");
  const auto r = run("run --config " + kTiny + " --op decode --peers fla --python /nonexistent/python3 --peers-dir " +
                     kFakes + " --json " + out + kQuick);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto rep = gdn::load_report(out);
  const auto skips = of_variant(rep, "fla/harness");
  ASSERT_EQ(skips.size(), decode_points().size());
  EXPECT_TRUE(contains(skips[0]->reason, "'/nonexistent/python3' was not found")) << skips[0]->reason;
}

TEST_F(RunPeers, KernelRunsThroughTheSameHarnessRunner) {
  const auto out = tmp("kernel.json");
  const auto r = run("run --config " + kTiny + " --op decode --kernel good:gdn --peers-dir " + kFakes + " --json " +
                     out + kQuick);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto rep = gdn::load_report(out);
  const auto good = of_variant(rep, "python:good:gdn/fn");
  ASSERT_EQ(good.size(), decode_points().size());
  EXPECT_EQ(good[0]->origin.path, "kernel good:gdn");
  // A kernel of one's own that cannot be imported is a mistake on the command line: exit 3 at once.
  const auto missing = run("run --config " + kTiny + " --op decode --kernel good:gdn --kernel missing:gdn --peers-dir " +
                           kFakes + kQuick);
  EXPECT_EQ(missing.code, 3) << missing.out;
  EXPECT_TRUE(contains(missing.out, "No module named 'missing'")) << missing.out;
  EXPECT_FALSE(contains(missing.out, "cases:")) << "nothing ran: " << missing.out;
}

// A --kernel under test is judged like ours: failed verification is exit 2 (a peer's never is).
TEST_F(RunPeers, KernelThatFailsVerificationIsExitTwo) {
  const auto out = tmp("wrong.json");
  const auto r = run("run --config " + kTiny + " --op decode --kernel wrong:gdn --peers-dir " + kFakes + " --json " +
                     out + kQuick);
  EXPECT_EQ(r.code, 2) << r.out;
  const auto rep = gdn::load_report(out);
  const auto wrong = of_variant(rep, "python:wrong:gdn/fn");
  ASSERT_EQ(wrong.size(), decode_points().size());
  EXPECT_EQ(wrong[0]->status, gdn::CaseStatus::verify_failed);
  const auto peer = run("run --config " + kTiny + " --op decode --peers flashinfer --peers-dir " + kFakes + kQuick);
  EXPECT_EQ(peer.code, 0) << "a peer's errors leave the exit code to ours: " << peer.out;
}

TEST_F(RunPeers, ResumeKeepsHarnessRecordsAndShardSplitsThePoints) {
  const auto out = tmp("resume.json");
  const std::string base = "run --config " + kTiny + " --op decode --peers fla --peers-dir " + kFakes + kQuick;
  ASSERT_EQ(run(base + " --json " + out).code, 0);
  const auto first = gdn::load_report(out);
  const auto again = run(base + " --json " + out + " --resume " + out);
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_FALSE(contains(again.out, "running fla")) << "every point already has its fla record: " << again.out;
  const auto second = gdn::load_report(out);
  EXPECT_EQ(second.cases.size(), first.cases.size());
  EXPECT_EQ(of_variant(second, "fla/fake").size(), decode_points().size());

  // Two shards hold every point's peer record once between them, and merge.
  const auto s0 = tmp("shard0.json"), s1 = tmp("shard1.json"), merged = tmp("merged.json");
  ASSERT_EQ(run(base + " --shard 0/2 --json " + s0).code, 0);
  ASSERT_EQ(run(base + " --shard 1/2 --json " + s1).code, 0);
  const auto a = of_variant(gdn::load_report(s0), "fla/fake").size();
  const auto b = of_variant(gdn::load_report(s1), "fla/fake").size();
  EXPECT_GT(a, 0u);
  EXPECT_GT(b, 0u);
  EXPECT_EQ(a + b, decode_points().size());
  const auto m = run("merge " + s0 + " " + s1 + " --output " + merged);
  ASSERT_EQ(m.code, 0) << m.out;
  EXPECT_EQ(of_variant(gdn::load_report(merged), "fla/fake").size(), decode_points().size());
}

// The harnesses' records are records like ours: compare, the exports and the dashboard take them.
TEST_F(RunPeers, HarnessRecordsFlowThroughCompareExportsAndDashboard) {
  const auto out = tmp("flow.json"), csv = tmp("flow.csv"), gbench = tmp("flow.gbench.json"), html = tmp("flow.html");
  const auto r = run("run --config " + kTiny + " --op decode --peers fla --peers-dir " + kFakes + " --json " + out +
                     " --csv " + csv + " --gbench " + gbench + kQuick);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto c = run("compare " + out + " " + out + " --variant 'fla/*'");
  EXPECT_EQ(c.code, 0) << c.out;
  EXPECT_TRUE(contains(c.out, "fla/fake")) << c.out;
  std::ifstream in(csv);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(contains(text, "fla/fake")) << text;
  EXPECT_TRUE(contains(read_json(gbench).dump(), "fla/fake"));
  const auto p = run("peers " + out);
  EXPECT_EQ(p.code, 0) << "the one report holds the peers: " << p.out;
  const auto d = run("dashboard " + out + " -o " + html);
  EXPECT_EQ(d.code, 0) << d.out;
  std::ifstream page(html);
  const std::string body((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(contains(body, "fla/fake"));
}

// The real harnesses, found in scripts/peers beside the program (build/ -> ../scripts/peers), on a
// machine without their peer: a skip per point naming what is missing, and the run goes on.
TEST_F(RunPeers, RealHarnessWithoutItsPeerGivesSkipsWithTheReason) {
  if (gdn::test::run_shell("python3 -c 'import fla' >/dev/null 2>&1").code == 0) GTEST_SKIP() << "fla is installed here";
  const auto out = tmp("real.json");
  const auto r = run("run --config " + kTiny + " --op decode --peers fla --json " + out + kQuick);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto rep = gdn::load_report(out);
  const auto skips = of_variant(rep, "fla/harness");
  ASSERT_EQ(skips.size(), decode_points().size());
  for (const auto* c : skips) {
    EXPECT_EQ(c->status, gdn::CaseStatus::skipped);
    EXPECT_TRUE(contains(c->reason, "fla is not importable here")) << c->reason;
    EXPECT_TRUE(contains(c->reason, "pip install fla-core==0.6.0")) << c->reason;
  }
}

// The plan's work model and tolerances are what the engine's records carry (a variant may tighten
// a tolerance of its own, never loosen it: the plan holds the op's, docs/method.md 4).
TEST(PlanJson, WorkAndTolerancesEqualTheEngines) {
  const auto plan_path = tmp("contract.plan.json"), out = tmp("contract.json");
  ASSERT_EQ(run("plan --config " + kTiny + " --json " + plan_path).code, 0);
  const auto r = run("run --config " + kTiny + " --json " + out + kQuick);
  ASSERT_EQ(r.code, 0) << r.out;
  const json plan = read_json(plan_path);
  EXPECT_EQ(plan["mode"], "cold");
  EXPECT_EQ(plan["stopping_rule"]["min_samples"], 10);
  EXPECT_EQ(plan["stopping_rule"]["max_noise"], 0.005);
  EXPECT_EQ(plan["stopping_rule"]["noise"]["min_samples"], 5);
  std::map<std::string, json> by_key;
  for (const auto& p : plan["points"]) by_key[p["shape_key"].get<std::string>()] = p;
  std::size_t compared = 0, equal = 0;
  for (const auto& c : gdn::load_report(out).cases) {
    ASSERT_TRUE(by_key.count(c.shape_key())) << c.shape_key();
    const json& p = by_key[c.shape_key()];
    EXPECT_EQ(p["work"]["bytes"].get<double>(), c.work.bytes) << c.shape_key();
    EXPECT_EQ(p["work"]["flops"].get<double>(), c.work.flops) << c.shape_key();
    EXPECT_EQ(p["work"]["flops_fi"].get<double>(), c.work.flops_fi) << c.shape_key();
    EXPECT_EQ(p["work"]["bandwidth_bound"].get<bool>(), c.work.bandwidth_bound) << c.shape_key();
    ASSERT_TRUE(c.verify.ran) << c.variant << " " << c.shape_key();
    for (const auto& t : c.verify.checks) {
      if (!p["tolerances"].contains(t.tensor)) continue;  // an extra check of the variant's own
      EXPECT_LE(t.tolerance, p["tolerances"][t.tensor].get<double>()) << t.tensor << " " << c.shape_key();
      ++compared;
      equal += t.tolerance == p["tolerances"][t.tensor].get<double>();
    }
    EXPECT_EQ(p["inputs"]["kind"], std::string(gdn::to_string(c.shape.inputs)));
    EXPECT_EQ(p["inputs"]["still_heads_from"].get<int>(), (3 * c.shape.h_v + 3) / 4);
  }
  EXPECT_GT(compared, 0u);
  EXPECT_GT(equal, compared / 2) << "most checks run at the op's tolerance";
}

// One report holding ours and the harnesses' records shows in the dashboard as ours with the peers
// beside them, like our report beside the peers' own reports.
TEST(RunPeersDashboard, HarnessRecordsOfOneReportArePeerColumns) {
  const std::string dir = std::string(GDN_SOURCE_DIR) + "/tests/data/reports/";
  gdn::RunReport one = gdn::load_report(dir + "ours.json");
  const std::size_t ours = one.cases.size();
  for (auto c : gdn::load_report(dir + "peers.json").cases) {
    c.origin = {gdn::kHarnessOrigin, c.variant.substr(0, c.variant.find('/')), ""};
    one.cases.push_back(std::move(c));
  }
  const json separate = gdn::dashboard_data({{"ours.json", gdn::load_report(dir + "ours.json")},
                                             {"peers.json", gdn::load_report(dir + "peers.json")}});
  const json joined = gdn::dashboard_data({{"one.json", one}});
  std::size_t rows = 0;
  for (std::size_t i = 0; i < joined.at("ops").size(); ++i) {
    const json& a = joined.at("ops")[i];
    const json& b = separate.at("ops")[i];
    EXPECT_EQ(a.at("columns"), b.at("columns")) << a.at("op");
    ASSERT_EQ(a.at("rows").size(), b.at("rows").size()) << a.at("op");
    for (std::size_t r = 0; r < a.at("rows").size(); ++r) EXPECT_EQ(a.at("rows")[r].at("peers"), b.at("rows")[r].at("peers"));
    rows += a.at("rows").size();
  }
  EXPECT_EQ(rows, ours);
}

}  // namespace

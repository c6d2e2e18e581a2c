// The command line's ad-hoc sweeps, repro lines, shards, merge and --devices, through the real
// binary (GDN_BINARY, gdnbench-testing) on CPU variants: a sweep given by flags and by a file
// gives the same records, a record's repro line re-runs its point, three shards merged equal the
// unsharded run, and a merge that would double or drop cases is refused (exit 3, files named).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "device/info.h"

#include "test_support.h"

namespace {

using nlohmann::json;

using Result = gdn::test::ShellResult;

Result sh(const std::string& cmd) {
  return gdn::test::run_shell(cmd + " 2>&1");
}

Result gdnbench(const std::string& args) { return sh(std::string(GDN_BINARY) + " " + args); }

std::string src(const std::string& rel) { return std::string(GDN_SOURCE_DIR) + "/" + rel; }

std::string tmp(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("gdnbench_split_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

json load(const std::string& path) { return json::parse(std::ifstream(path)); }

void save(const std::string& path, const json& j) { std::ofstream(path) << j.dump(1); }

// Each record's case key, in report order.
std::vector<std::string> keys(const json& report) {
  std::vector<std::string> out;
  for (const auto& c : report["cases"])
    out.push_back(c["variant"].get<std::string>() + " | " + c["shape_key"].get<std::string>() + " | " +
                  c["mode"].get<std::string>() + " | seed " + std::to_string(c["seed"].get<uint64_t>()));
  return out;
}

// Two device slots where the host has none (CUDA entries skip) or several GPUs; one on a one-GPU
// host, where device 1 would be refused.
std::string two_devices() { return gdn::query_devices().size() == 1 ? "0" : "0,1"; }

const std::string kFast = " --quiet --min-samples 3 --host-max-noise 50 --host-timeout 1 ";

TEST(SweepSplit, AdhocFlagsGiveTheSameRecordsAsTheSameYamlCase) {
  const std::string yaml = tmp("decode.yaml");
  std::ofstream(yaml) << "cases:\n  - op: decode\n    variant: cpu\n    heads: \"2/4\"\n    head_dim: 32\n"
                         "    batch: [1, 3]\n    layout: [vk, kv]\n";
  auto r = gdnbench("verify --quiet --config " + yaml + " --json " + tmp("file.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  r = gdnbench("verify --quiet --op decode -a batch=1,3 -a heads=2/4 -a head_dim=32 -a layout=vk,kv --variant cpu "
               "--json " + tmp("flags.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  const json flags = load(tmp("flags.json"));
  EXPECT_EQ(keys(flags), keys(load(tmp("file.json"))));
  EXPECT_EQ(flags["cases"].size(), 4u);
  EXPECT_EQ(flags["config"]["path"], "command line: --op decode -a layout=vk,kv -a heads=2/4 -a head_dim=32 "
                                     "-a batch=1,3 --variant cpu");
}

TEST(SweepSplit, BadAxisFlagsExitThreeNamingTheFlag) {
  auto r = gdnbench("run --op decode -a bach=4");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("-a bach=4: unknown key"), std::string::npos) << r.out;
  r = gdnbench("verify --op decode -a batch=4,four");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("-a batch=4,four: batch[1]: expected an integer (got four)"), std::string::npos) << r.out;
  // With --config, the flag overrides the file's cases and its errors name it the same way.
  r = gdnbench("run -a tokens=65 --config " + src("tests/data/tiny.yaml"));
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("-a tokens=65: cases[2].tokens: must be <= 64 (got 65)"), std::string::npos) << r.out;
}

TEST(SweepSplit, EveryReproLineReRunsItsPointAlone) {
  const std::string all = tmp("all.json");
  auto r = gdnbench("verify --quiet --config " + src("tests/data/tiny.yaml") + " --seed 99 --json " + all);
  ASSERT_EQ(r.code, 0) << r.out;
  const json report = load(all);
  ASSERT_EQ(report["cases"].size(), 8u);
  std::size_t i = 0;
  for (const auto& c : report["cases"]) {
    const std::string line = c["repro"];
    ASSERT_EQ(line.rfind(std::string(GDN_BINARY) + " verify --op ", 0), 0u) << line;
    const std::string one = tmp("one" + std::to_string(i++) + ".json");
    r = sh(line + " --quiet --json " + one);
    ASSERT_EQ(r.code, 0) << line << "\n" << r.out;
    const json again = load(one);
    ASSERT_EQ(again["cases"].size(), 1u) << line;
    EXPECT_EQ(keys(again)[0], keys(json{{"cases", {c}}})[0]) << line;
    EXPECT_EQ(again["cases"][0]["shape"], c["shape"]) << line;
    EXPECT_EQ(again["cases"][0]["repro"], line) << "a repro line reproduces itself";
  }
  // A timed record's line re-runs it timed, in its mode.
  r = gdnbench("run" + kFast + "--mode hot --op mtp -a tokens=3 -a heads=2/4 -a head_dim=32 -a batch=2 --variant cpu "
               "--json " + tmp("hot.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  const json hot = load(tmp("hot.json"))["cases"][0];
  const std::string line = hot["repro"];
  EXPECT_NE(line.find(" run --op mtp "), std::string::npos) << line;
  EXPECT_NE(line.find("--mode hot"), std::string::npos) << line;
  r = sh(line + kFast + "--json " + tmp("hot-again.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(keys(load(tmp("hot-again.json"))), keys(json{{"cases", {hot}}}));
}

TEST(SweepSplit, AVerificationFailurePrintsItsReproLine) {
  auto r = gdnbench("verify --quiet --config " + src("tests/data/broken.yaml"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("failed verification; re-run it alone:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" verify --op decode -a heads=2/4 -a head_dim=32 -a batch=2 --variant decode/cpu_broken --seed "),
            std::string::npos)
      << r.out;
}

TEST(SweepSplit, ThreeShardsMergedEqualTheUnshardedRun) {
  const std::string cfg = " --config " + src("tests/data/tiny.yaml");
  auto r = gdnbench("run" + kFast + cfg + " --json " + tmp("whole.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  std::string parts;
  std::size_t records = 0;
  for (int i = 2; i >= 0; --i) {  // any order
    const std::string part = tmp("shard" + std::to_string(i) + ".json");
    r = gdnbench("run" + kFast + cfg + " --shard " + std::to_string(i) + "/3 --json " + part);
    ASSERT_EQ(r.code, 0) << r.out;
    const json j = load(part);
    EXPECT_EQ(j["shard"], (json{{"index", i}, {"count", 3}}));
    records += j["cases"].size();
    parts += " " + part;
  }
  r = gdnbench("merge" + parts + " -o " + tmp("merged.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  const json merged = load(tmp("merged.json"));
  const json whole = load(tmp("whole.json"));
  EXPECT_EQ(records, whole["cases"].size());
  EXPECT_EQ(keys(merged), keys(whole)) << "the same records, in the unsharded run's order";
  EXPECT_TRUE(merged["complete"].get<bool>());
  EXPECT_FALSE(merged.contains("shard"));
  EXPECT_EQ(merged["config"], whole["config"]);
  // The merged report is a report like any other: compare reads it.
  r = gdnbench("compare " + tmp("whole.json") + " " + tmp("merged.json") + " --threshold 1000");
  EXPECT_EQ(r.code, 0) << r.out;
}

TEST(SweepSplit, MergeRefusesOverlapsGapsAndForeignReports) {
  const std::string cfg = " --config " + src("tests/data/tiny.yaml");
  for (int i = 0; i < 2; ++i) {
    auto r = gdnbench("verify --quiet" + cfg + " --shard " + std::to_string(i) + "/2 --json " +
                      tmp("s" + std::to_string(i) + ".json"));
    ASSERT_EQ(r.code, 0) << r.out;
  }
  const std::string s0 = tmp("s0.json"), s1 = tmp("s1.json");

  // Shard 0 under another name, claiming to be shard 1: its cases overlap shard 0's.
  json fake = load(s0);
  fake["shard"]["index"] = 1;
  save(tmp("fake1.json"), fake);
  auto r = gdnbench("merge " + s0 + " " + tmp("fake1.json") + " -o " + tmp("m.json"));
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("both hold"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fake1.json"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(tmp("m.json")));

  // The same shard twice.
  std::filesystem::copy_file(s0, tmp("s0-copy.json"));
  r = gdnbench("merge " + s0 + " " + tmp("s0-copy.json") + " -o " + tmp("m.json"));
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("are both shard 0 of 2"), std::string::npos) << r.out;

  // A missing shard: refused, or merged as incomplete with --allow-partial.
  r = gdnbench("merge " + s1 + " -o " + tmp("m.json"));
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("shard 0 of 2 is missing"), std::string::npos) << r.out;
  r = gdnbench("merge " + s1 + " --allow-partial -o " + tmp("partial.json"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(load(tmp("partial.json"))["complete"].get<bool>());

  // Another config, another build, an interrupted shard.
  for (const auto& [field, value] : std::vector<std::pair<std::string, json>>{
           {"/config/hash", "0123456789abcdef"}, {"/tool/git_sha", "0000000"}, {"/complete", false}}) {
    json other = load(s1);
    other[json::json_pointer(field)] = value;
    save(tmp("other.json"), other);
    r = gdnbench("merge " + s0 + " " + tmp("other.json") + " -o " + tmp("m.json"));
    EXPECT_EQ(r.code, 3) << field << ": " << r.out;
    EXPECT_NE(r.out.find("other.json"), std::string::npos) << field << ": " << r.out;
  }
  // A shard field that cannot be: refused by the report schema, naming the field.
  json bad = load(s1);
  bad["shard"] = {{"index", 2}, {"count", 2}};
  save(tmp("bad.json"), bad);
  r = gdnbench("merge " + s0 + " " + tmp("bad.json") + " -o " + tmp("m.json"));
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("shard: needs a count >= 1 and an index below it"), std::string::npos) << r.out;
  // A report from before repro and shard existed still merges (as shard 0 of 1).
  json old = load(s0);
  old.erase("shard");
  for (auto& c : old["cases"]) c.erase("repro");
  save(tmp("old.json"), old);
  r = gdnbench("merge " + tmp("old.json") + " --allow-partial -o " + tmp("old-merged.json"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(keys(load(tmp("old-merged.json"))), keys(old));
  // An output that is an input.
  r = gdnbench("merge " + s0 + " " + s1 + " -o " + s0);
  EXPECT_EQ(r.code, 3) << r.out;
}

TEST(SweepSplit, ShardFlagIsCheckedBeforeAnythingRuns) {
  for (const char* bad : {"3/3", "1/0", "a/2", "1-2", "-1/2"}) {
    auto r = gdnbench(std::string("verify --quiet --config ") + src("tests/data/tiny.yaml") + " --shard=" + bad);
    EXPECT_EQ(r.code, 3) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("--shard"), std::string::npos) << r.out;
  }
}

// On a host without GPUs, --devices still runs every entry in a child: CPU entries one at a time
// in the host slot, CUDA entries on the listed devices (each skipped with the reason). The
// report equals the plain run's, in plan order.
TEST(SweepSplit, DevicesRunEveryEntryInChildrenAndKeepPlanOrder) {
  const std::string cfg = " --config " + src("tests/data/tiny.yaml");
  auto r = gdnbench("verify --quiet" + cfg + " --json " + tmp("plain.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  r = gdnbench("verify --quiet" + cfg + " --devices " + two_devices() + " --json " + tmp("devices.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(keys(load(tmp("devices.json"))), keys(load(tmp("plain.json"))));

  // CUDA variants too: dealt to both device slots at once.
  r = gdnbench("verify --quiet --op decode -a batch=1,2,3,4 -a heads=2/4 -a head_dim=32 --variant 'cuda_simple' "
               "--json " + tmp("cuda-plain.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  r = gdnbench("verify --quiet --op decode -a batch=1,2,3,4 -a heads=2/4 -a head_dim=32 --variant 'cuda_simple' "
               "--devices " + two_devices() + " --json " + tmp("cuda-devices.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  const json plain = load(tmp("cuda-plain.json")), spread = load(tmp("cuda-devices.json"));
  EXPECT_EQ(keys(spread), keys(plain));
  for (std::size_t i = 0; i < plain["cases"].size(); ++i)
    EXPECT_EQ(spread["cases"][i]["status"], plain["cases"][i]["status"]) << spread["cases"][i].dump();

  for (const char* bad : {"0,0", "x", "0,", ""}) {
    r = gdnbench(std::string("verify --quiet") + cfg + " --devices='" + bad + "'");
    EXPECT_EQ(r.code, 3) << bad << ": " << r.out;
  }
}

// Ctrl-C while --devices runs: children finish their case, the report keeps every finished one.
TEST(SweepSplit, DevicesInterruptedKeepEveryFinishedCase) {
  const std::string json_path = tmp("stopped.json");
  // Slow enough that the signal lands mid-sweep: 8 timed entries of up to 1 s each, one at a time.
  const std::string cmd = std::string(GDN_BINARY) + " run --quiet --min-samples 100000 --max-samples 100000 "
                          "--host-timeout 1 --config " + src("tests/data/tiny.yaml") + " --devices 0 --json " +
                          json_path;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setpgid(0, 0);
    execl("/bin/sh", "sh", "-c", ("exec " + cmd + " >/dev/null 2>&1").c_str(), nullptr);
    _exit(127);
  }
  setpgid(pid, pid);
  sleep(3);
  kill(-pid, SIGINT);  // the whole group, as a terminal's Ctrl-C
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const json j = load(json_path);
  EXPECT_FALSE(j["complete"].get<bool>());
  EXPECT_GE(j["cases"].size(), 1u);
  EXPECT_LT(j["cases"].size(), 8u);
  for (const auto& c : j["cases"]) EXPECT_EQ(c["status"], "ok") << c.dump();
}

}  // namespace

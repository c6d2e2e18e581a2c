// Outputs that must not destroy inputs, and work that must not be lost: an output may not be the
// config, a peer or resumed report, another output, or a device, FIFO or directory; outputs and
// peer reports are checked before the sweep; one run at a time writes a report; a killed writer's
// temp files go with the next run (src/cli/output_paths, src/report/report_lock).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "bounded_child.h"
#include "core/errors.h"
#include "report/report_lock.h"
#include "test_support.h"

namespace gdn {
namespace {

namespace fs = std::filesystem;
using test::gdnbench;
using test::Scratch;

const std::string kTiny = std::string(GDN_SOURCE_DIR) + "/tests/data/tiny.yaml";

std::string slurp_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A timing no CPU case finishes quickly: a refusal that comes in seconds came before the sweep.
std::vector<std::string> slow_run(const std::string& config) {
  return {"run", "--quiet", "--config", config, "--op", "decode", "--min-samples", "1000000", "--max-samples", "1000000000", "--host-max-noise",
          "0.000001", "--host-timeout", "30"};
}

std::vector<std::string> with(std::vector<std::string> args, std::initializer_list<std::string> more) {
  args.insert(args.end(), more);
  return args;
}

void expect_refused(const test::ChildResult& r, int code, std::initializer_list<std::string> words) {
  EXPECT_EQ(r.code, code) << r.out;
  EXPECT_LT(r.seconds, test::kRefusalSeconds) << "refused before the sweep\n" << r.out;
  for (const auto& w : words) EXPECT_TRUE(test::contains(r.out, w)) << "expected '" << w << "' in:\n" << r.out;
}

TEST(HostileOutputs, AnOutputNeverOverwritesTheConfig) {
  Scratch dir("out_config");
  const auto config = dir.put("sweep.yaml", slurp_file(kTiny));
  const std::string before = slurp_file(config);
  for (const char* flag : {"--json", "--csv", "--gbench", "--bigger-is-better"}) {
    expect_refused(gdnbench(with(slow_run(config), {flag, config})), 3, {flag, "sweep.yaml", "--config"});
    EXPECT_EQ(slurp_file(config), before) << flag;
  }
  // The same file by another name is the same file.
  fs::create_symlink(config, dir.path("alias.yaml"));
  expect_refused(gdnbench(with(slow_run(config), {"--json", dir.path("alias.yaml")})), 3, {"--config"});
  EXPECT_EQ(slurp_file(config), before);
}

TEST(HostileOutputs, TwoOutputsNeverShareAPath) {
  Scratch dir("out_twice");
  const auto x = dir.path("x.out");
  expect_refused(gdnbench(with(slow_run(kTiny), {"--json", x, "--csv", x})), 3, {"--csv", "--json", "same file"});
  expect_refused(gdnbench(with(slow_run(kTiny), {"--gbench", x, "--bigger-is-better", dir.path("./x.out")})), 3,
                 {"--bigger-is-better", "--gbench"});
  EXPECT_FALSE(fs::exists(x));
}

TEST(HostileOutputs, PeerAndResumedReportsAreNotOutputs) {
  Scratch dir("out_inputs");
  const auto peer = dir.put("peer.json", "{}");
  const auto resume = dir.put("resume.json", "{}");
  expect_refused(gdnbench(with(slow_run(kTiny), {"--peer", peer, "--csv", peer})), 3, {"--csv", "--peer"});
  expect_refused(gdnbench(with(slow_run(kTiny), {"--peer", peer, "--peer-markdown", peer})), 3, {"--peer-markdown"});
  expect_refused(gdnbench(with(slow_run(kTiny), {"--resume", resume, "--gbench", resume})), 3, {"--gbench", "--resume"});
  EXPECT_EQ(slurp_file(peer), "{}");
  EXPECT_EQ(slurp_file(resume), "{}");
}

TEST(HostileOutputs, DevicesFifosAndDirectoriesAreNotOutputs) {
  Scratch dir("out_special");
  const auto fifo = dir.path("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  expect_refused(gdnbench(with(slow_run(kTiny), {"--json", fifo})), 3, {"--json", "FIFO"});
  EXPECT_TRUE(fs::is_fifo(fifo)) << "the FIFO is still a FIFO";
  fs::create_directories(dir.path("sub"));
  expect_refused(gdnbench(with(slow_run(kTiny), {"--csv", dir.path("sub")})), 3, {"--csv", "directory"});
  EXPECT_TRUE(fs::is_directory(dir.path("sub")));
}

TEST(HostileOutputs, OutputsAndPeersAreCheckedBeforeTheSweep) {
  Scratch dir("out_before");
  const auto json = dir.path("out.json");
  expect_refused(gdnbench(with(slow_run(kTiny), {"--json", json, "--csv", "/nonexistent/dir/x.csv"})), 4,
                 {"--csv", "/nonexistent/dir"});
  expect_refused(gdnbench(with(slow_run(kTiny), {"--json", json, "--peer", dir.path("missing.json")})), 3,
                 {"missing.json"});
  expect_refused(gdnbench(with(slow_run(kTiny), {"--json", json, "--peer", dir.put("bad.json", "{\"schema")})), 3,
                 {"bad.json"});
  EXPECT_FALSE(fs::exists(json)) << "nothing ran";
}

TEST(HostileOutputs, ASecondWriterOfTheSameReportIsRefused) {
  Scratch dir("out_lock");
  const auto json = dir.path("shared.json");
  {
    ReportLock first(json);
    EXPECT_TRUE(fs::exists(first.lock_path()));
    try {
      ReportLock second(json);
      ADD_FAILURE() << "a second lock on one report";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), kExitRuntime);
      EXPECT_TRUE(test::contains(e.what(), "shared.json")) << e.what();
    }
    auto r = gdnbench(with(slow_run(kTiny), {"--json", json}));
    expect_refused(r, 4, {"shared.json", "another gdnbench", std::to_string(getpid())});
    EXPECT_FALSE(fs::exists(json));
  }
  EXPECT_FALSE(fs::exists(json + ".lock")) << "the holder removes its lock file";
  ReportLock again(json);  // free again
}

TEST(HostileOutputs, AKilledWritersTempFilesGoWithTheNextRun) {
  Scratch dir("out_stale");
  const auto json = dir.path("r.json");
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);  // a pid that no longer runs
  const auto stale = dir.put("r.json.tmp." + std::to_string(gone), "half a report");
  const auto live = dir.put("r.json.tmp." + std::to_string(getpid()), "a live writer's");
  const auto other = dir.put("other.json.tmp." + std::to_string(gone), "another report's");
  EXPECT_EQ(remove_stale_temp_files(json), 1);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));

  dir.put("r.json.tmp." + std::to_string(gone), "half a report");
  auto r = gdnbench({"verify", "--quiet", "--config", kTiny, "--op", "decode", "--json", json}, 120);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(fs::exists(stale)) << "the run removed it";
  EXPECT_TRUE(fs::exists(json));
  EXPECT_FALSE(fs::exists(json + ".lock"));
}

}  // namespace
}  // namespace gdn

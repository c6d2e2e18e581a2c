// Hostile report files (docs/report-schema.md "Reading"): every one is refused with exit 3 and a
// message naming the file and what is wrong, in bounded time and memory, and never crashes.
// compare, peers and run --resume all read reports through load_report.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "bounded_child.h"
#include "core/errors.h"
#include "report/report.h"
#include "report/report_schema.h"
#include "test_support.h"

namespace gdn {
namespace {

using nlohmann::json;
using test::gdnbench;
using test::Scratch;

// A small valid report: two timed CPU decode records.
json good_report() {
  RunReport r;
  r.command = "run";
  r.mode = "cold";
  for (int batch : {1, 2}) {
    CaseRecord c;
    c.case_name = "d";
    c.variant = "decode/cpu";
    c.shape.op = OpKind::decode;
    c.shape.batch = batch;
    c.mode = "cold";
    c.device = "host";
    c.timed = true;
    c.timing.samples_s = {1e-3, 1e-3, 1e-3};
    c.timing.stats = compute_stats(c.timing.samples_s);
    c.timing.converged = true;
    r.cases.push_back(c);
  }
  return to_json(r);
}

void expect_refused(const test::ChildResult& r, int code, std::initializer_list<std::string> words) {
  EXPECT_EQ(r.code, code) << r.out;
  EXPECT_EQ(r.signal, 0) << "no crash\n" << r.out;
  EXPECT_FALSE(r.timed_out) << r.out;
  EXPECT_LT(r.seconds, test::kRefusalSeconds) << r.out;
  EXPECT_LT(r.peak_mib, test::kRefusalMiB) << r.out;
  for (const auto& w : words) EXPECT_TRUE(test::contains(r.out, w)) << "expected '" << w << "' in:\n" << r.out;
}

// The message load_report throws, or "" when it loads.
std::string load_error(const std::string& path) {
  try {
    load_report(path);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitBadInput) << e.what();
    return e.what();
  }
  return "";
}

std::string nested(const std::string& open, const std::string& close, int depth, const std::string& inner = "1") {
  std::string s;
  for (int i = 0; i < depth; ++i) s += open;
  s += inner;
  for (int i = 0; i < depth; ++i) s += close;
  return s;
}

// ---- unbounded reads --------------------------------------------------------------------------

TEST(HostileReport, DevicesAndFifosAreRefusedBeforeAByteIsRead) {
  Scratch dir("hostile_devices");
  const auto good = dir.put("good.json", good_report().dump());
  const auto fifo = dir.path("fifo.json");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  expect_refused(gdnbench({"compare", "/dev/zero", good}), 3, {"/dev/zero", "character device"});
  expect_refused(gdnbench({"compare", good, "/dev/urandom"}), 3, {"/dev/urandom", "character device"});
  expect_refused(gdnbench({"peers", "/dev/zero", "--peer", good}), 3, {"/dev/zero"});
  expect_refused(gdnbench({"peers", good, "--peer", fifo}), 3, {fifo, "FIFO"});
  expect_refused(gdnbench({"compare", fifo, good}), 3, {fifo, "FIFO"});
  expect_refused(gdnbench({"compare", dir.path(""), good}), 3, {"directory"});
  expect_refused(gdnbench({"run", "--config", std::string(GDN_SOURCE_DIR) + "/tests/data/tiny.yaml", "--resume",
                           "/dev/zero"}),
                 3, {"/dev/zero"});
  // The config reader too: a FIFO with no writer used to block forever.
  expect_refused(gdnbench({"verify", "--config", fifo}), 3, {fifo, "FIFO"});
  expect_refused(gdnbench({"verify", "--config", "/dev/zero"}), 3, {"/dev/zero"});
}

TEST(HostileReport, AFileOverTheSizeLimitIsRefusedUnread) {
  Scratch dir("hostile_huge");
  const auto good = dir.put("good.json", good_report().dump());
  const auto huge = dir.path("huge.json");
  std::ofstream(huge) << "{";
  std::filesystem::resize_file(huge, std::uintmax_t(1) << 30);  // 1 GiB, sparse
  expect_refused(gdnbench({"compare", huge, good}), 3, {huge, "MiB limit"});
  // A large config is read only up to its limit.
  const auto big_config = dir.path("big.yaml");
  std::ofstream(big_config) << "cases:\n";
  std::filesystem::resize_file(big_config, std::uintmax_t(1) << 30);
  expect_refused(gdnbench({"verify", "--config", big_config}), 3, {"big.yaml", "limit"});
}

// ---- a crash ----------------------------------------------------------------------------------

TEST(HostileReport, DeepNestingIsRefusedWithoutACrash) {
  Scratch dir("hostile_deep");
  const auto good = dir.put("good.json", good_report().dump());
  auto deep_at = [&](const std::string& where) {
    std::string text = good_report().dump();
    const std::string key = "\"" + where + "\":";
    const auto at = text.find(key) + key.size();
    const auto end = text.find_first_of(",}", at);  // calibration is {} and replaced whole
    const std::string deep = nested("{\"a\":", "}", 100000);
    return text.substr(0, at) + deep + text.substr(text[at] == '{' ? text.find('}', at) + 1 : end);
  };
  expect_refused(gdnbench({"compare", dir.put("calibration.json", deep_at("calibration")), good}), 3,
                 {"calibration.json", "nesting deeper than 64"});
  expect_refused(gdnbench({"compare", good, dir.put("top.json", nested("[", "]", 100000))}), 3, {"nesting"});
  expect_refused(gdnbench({"peers", good, "--peer", dir.put("cases.json", "{\"schema_version\":1,\"cases\":" +
                                                                              nested("[", "]", 100000) + "}")}),
                 3, {"nesting"});
}

// ---- reports accepted when they should be refused -------------------------------------------

TEST(HostileReport, OnlyTheSchemaVersionsItKnowsAreRead) {
  Scratch dir("hostile_version");
  const std::string key = "\"schema_version\":" + std::to_string(kSchemaVersion);
  const std::string newer = std::to_string(kSchemaVersion + 1);
  for (const char* v : {"4294967297", "-1", "0", newer.c_str(), "18446744073709551615", "1.0", "\"1\"", "null"}) {
    std::string patched = good_report().dump();
    patched.replace(patched.find(key), key.size(), "\"schema_version\":" + std::string(v));
    const auto path = dir.put("v.json", patched);
    const std::string msg = load_error(path);
    EXPECT_TRUE(test::contains(msg, path)) << v << ": " << msg;
    EXPECT_TRUE(test::contains(msg, "schema_version")) << v << ": " << msg;
  }
  EXPECT_EQ(load_error(dir.put("ok.json", good_report().dump())), "");
  // Every older version this gdnbench reads.
  for (int v = kOldestSchemaVersion; v < kSchemaVersion; ++v) {
    std::string older = good_report().dump();
    older.replace(older.find(key), key.size(), "\"schema_version\":" + std::to_string(v));
    EXPECT_EQ(load_error(dir.put("older.json", older)), "") << v;
  }
}

TEST(HostileReport, CasesMustBeAnArrayOfRecords) {
  Scratch dir("hostile_cases");
  const auto good = dir.put("good.json", good_report().dump());
  for (const json& cases : {json::object(), json("cases"), json(3), json::array({1}), json::array({json::object()})}) {
    auto j = good_report();
    j["cases"] = cases;
    const auto path = dir.put("c.json", j.dump());
    EXPECT_TRUE(test::contains(load_error(path), "cases")) << cases.dump();
  }
  auto j = good_report();
  j.erase("cases");
  EXPECT_TRUE(test::contains(load_error(dir.put("none.json", j.dump())), "cases"));
  // What compare said of such a report: "PASS: 2 missing".
  j["cases"] = json::object();
  expect_refused(gdnbench({"compare", good, dir.put("object.json", j.dump())}), 3, {"object.json", "cases"});
}

TEST(HostileReport, TimesMustBeFiniteAndNonNegative) {
  Scratch dir("hostile_times");
  const auto good = dir.put("good.json", good_report().dump());
  std::string text = good_report().dump();
  const std::string median = "\"median\":";
  const auto at = text.find(median) + median.size();
  const auto end = text.find_first_of(",}", at);
  const auto huge = dir.put("huge_median.json", text.substr(0, at) + "1e400" + text.substr(end));
  expect_refused(gdnbench({"compare", good, huge}), 3, {"huge_median.json", "too large"});

  auto j = good_report();
  j["cases"][1]["timing"]["stats"]["median"] = -0.5;
  expect_refused(gdnbench({"compare", good, dir.put("negative.json", j.dump())}), 3,
                 {"negative.json", "cases[1].timing.stats.median", "negative"});
  j = good_report();
  j["cases"][0]["timing"]["samples_s"][2] = -1;
  EXPECT_TRUE(test::contains(load_error(dir.put("sample.json", j.dump())), "cases[0].timing.samples_s[2]"));
  j = good_report();
  j["cases"][0]["timing"]["stats"]["median"] = "fast";
  EXPECT_TRUE(test::contains(load_error(dir.put("type.json", j.dump())), "cases[0].timing.stats.median"));
  j = good_report();
  j["cases"][0]["seed"] = -3;
  EXPECT_TRUE(test::contains(load_error(dir.put("seed.json", j.dump())), "cases[0].seed"));
}

// An integer field given a huge, negative or fractional number is refused by name; a cast would
// be undefined behaviour (the report fuzzer found 2.5e71 reaching an unsigned field).
TEST(HostileReport, IntegerFieldsAreRangeChecked) {
  Scratch dir("hostile_integers");
  auto j = good_report();
  j["cases"][0]["shape"]["batch"] = 2.5276e+71;
  EXPECT_TRUE(test::contains(load_error(dir.put("batch.json", j.dump())), "'batch' must be an integer"));
  j = good_report();
  j["cases"][1]["shape"]["batch"] = 1.5;
  EXPECT_TRUE(test::contains(load_error(dir.put("fraction.json", j.dump())), "not 1.5"));
  j = good_report();
  j["host"]["logical_cores"] = 1e30;
  EXPECT_TRUE(test::contains(load_error(dir.put("cores.json", j.dump())), "'logical_cores'"));
  j = good_report();
  j["host"]["memory_bytes"] = -1;
  EXPECT_TRUE(test::contains(load_error(dir.put("memory.json", j.dump())), "'memory_bytes'"));
  j = good_report();
  j["cases"][1]["shape"]["batch"] = 2.0;  // a whole float is a count
  EXPECT_EQ(load_error(dir.put("whole.json", j.dump())), "");
  EXPECT_EQ(load_report(dir.path("whole.json")).cases[1].shape.batch, 2);
}

TEST(HostileReport, ACaseGivenTwiceIsRefused) {
  Scratch dir("hostile_dup");
  const auto good = dir.put("good.json", good_report().dump());
  auto j = good_report();
  auto slow = j["cases"][0];
  slow["timing"]["stats"]["median"] = 0.1;  // 100x slower: compare used to keep the first and pass
  j["cases"].push_back(slow);
  expect_refused(gdnbench({"compare", good, dir.put("dup.json", j.dump())}), 3, {"dup.json", "cases[2]", "cases[0]"});
}

// ---- names: bounded and printable --------------------------------------------------------------

TEST(HostileReport, AHugeNameIsRefusedWithinBounds) {
  Scratch dir("hostile_name");
  const auto good = dir.put("good.json", good_report().dump());
  auto j = good_report();
  j["cases"][0]["variant"] = "decode/" + std::string(10 << 20, 'x');
  const auto path = dir.put("name.json", j.dump());
  expect_refused(gdnbench({"compare", good, path}), 3, {"name.json", "cases[0].variant", "limit"});
  expect_refused(gdnbench({"peers", path, "--peer", good}), 3, {"name.json"});
  j = good_report();
  j["cases"][0]["reason"] = std::string(1 << 20, 'r');
  EXPECT_TRUE(test::contains(load_error(dir.put("reason.json", j.dump())), "limit"));
}

TEST(HostileReport, ControlCharactersNeverReachTheTerminal) {
  Scratch dir("hostile_control");
  const auto good = dir.put("good.json", good_report().dump());
  auto j = good_report();
  j["cases"][0]["variant"] = std::string("decode/\x1b[2J") + '\0' + "cpu";
  auto r = gdnbench({"compare", good, dir.put("esc_name.json", j.dump())});
  expect_refused(r, 3, {"cases[0].variant", "control character"});
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);

  // Free text (an error's reason) is kept, with its control characters written out.
  j = good_report();
  j["cases"][1]["status"] = "error";
  j["cases"][1]["reason"] = std::string("boom\x1b[31mred") + '\0' + "\r\x7f end";
  r = gdnbench({"compare", good, dir.put("esc_reason.json", j.dump())});
  EXPECT_EQ(r.code, 5) << r.out;  // the errored case is missing from NEW: the gate refuses
  EXPECT_TRUE(test::contains(r.out, "boom\\x1b[31mred\\x00\\x0d\\x7f end")) << r.out;
  for (char c : {'\x1b', '\0', '\r', '\x7f'}) EXPECT_EQ(r.out.find(c), std::string::npos) << int(c) << "\n" << r.out;
  EXPECT_EQ(escape_controls("a\xc2\x9b" "b\tc\n"), "a\\u009bb\tc\n");  // C1 CSI too; tab and newline stay
}

// ---- run --resume keeps only records of the run it resumes ------------------------------------

TEST(HostileReport, ResumeRefusesAReportOfAnotherRun) {
  Scratch dir("hostile_resume");
  const std::string config = std::string(GDN_SOURCE_DIR) + "/tests/data/tiny.yaml";
  const auto verified = dir.path("verify.json");
  auto r = gdnbench({"verify", "--quiet", "--config", config, "--op", "decode", "--json", verified}, 120);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(verified);
  const json base = json::parse(in);
  auto resume = [&](const json& report, std::vector<std::string> extra = {}) {
    const auto path = dir.put("resume.json", report.dump());
    std::vector<std::string> args{"run", "--quiet", "--config", config, "--op", "decode", "--resume", path,
                                  "--json", dir.path("out.json")};
    args.insert(args.end(), extra.begin(), extra.end());
    auto res = gdnbench(args);
    EXPECT_FALSE(std::filesystem::exists(dir.path("out.json"))) << "refused before the sweep";
    return res;
  };
  // A verify report: it has no timings to keep (a resume used to write complete: true with none).
  expect_refused(resume(base), 3, {"resume.json", "'verify' report"});
  json other = base;
  other["command"] = "run";
  other["mode"] = "cold";
  for (auto& c : other["cases"]) c["mode"] = "cold";
  other["config"]["hash"] = "0123456789abcdef";
  expect_refused(resume(other), 3, {"resume.json", "config"});
  json hot = base;
  hot["command"] = "run";
  hot["mode"] = "hot";
  expect_refused(resume(hot), 3, {"mode hot"});
  json mixed = base;
  mixed["command"] = "run";
  mixed["mode"] = "cold";
  mixed["cases"][0]["mode"] = "hot";
  expect_refused(resume(mixed), 3, {"cases[0]", "mode hot"});
}

}  // namespace
}  // namespace gdn

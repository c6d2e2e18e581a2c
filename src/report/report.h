// The run report: metadata plus one record per case. JSON is the durable form; the writer
// rewrites the whole file atomically (temp file, then rename) after every case.
#pragma once

#include <functional>
#include <istream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "device/info.h"
#include "report/record.h"

namespace gdn {

// 2 added timing.repetitions; a version-1 report reads as a run of one repetition.
constexpr int kSchemaVersion = 2;
constexpr int kOldestSchemaVersion = 1;

struct RunReport {
  std::string tool_version;
  std::string git_sha;
  std::vector<std::string> argv;
  std::string command;  // run | verify
  std::string config_path;
  std::string config_hash;
  std::string mode;
  std::string started_at;   // ISO 8601 UTC
  std::string finished_at;  // empty while running
  bool complete = false;    // false: interrupted or still running
  // --shard INDEX/COUNT: this report holds the plan entries whose index % COUNT == INDEX;
  // COUNT 0: the whole sweep.
  std::size_t shard_index = 0, shard_count = 0;
  HostInfo host;
  std::vector<DeviceInfo> devices;
  nlohmann::json calibration = nlohmann::json::object();  // peaks used for roofline %
  std::vector<CaseRecord> cases;
};

nlohmann::json to_json(const Shape&);
Shape shape_from_json(const nlohmann::json&);
nlohmann::json to_json(const CaseRecord&);
CaseRecord record_from_json(const nlohmann::json&);
nlohmann::json to_json(const RunReport&);
RunReport report_from_json(const nlohmann::json&);

// Reads a report file; input_error (exit 3) naming the file on any problem (report_schema.h
// says what is checked).
RunReport load_report(const std::string& path);
// The same from a stream (the fuzz target's entry); `path` names it in messages, `over_limit`
// says whether the stream stopped at a size limit.
RunReport read_report(std::istream& in, const std::string& path, const std::function<bool()>& over_limit = {});
// Writes JSON to `path` atomically (path.tmp, fsync, rename). Throws runtime_error (exit 4).
void write_file_atomic(const std::string& path, const std::string& text);
void write_report(const std::string& path, const RunReport& r);

// Views.
// Tables per op, fitting `width` columns (shape keys factored or labelled, notes folded).
std::string format_tables(const std::vector<CaseRecord>& cases, bool breakdown, std::size_t width = 120);
std::string format_csv(const std::vector<CaseRecord>& cases);
nlohmann::json to_gbench(const RunReport& r);              // Google-Benchmark-shaped
nlohmann::json to_bigger_is_better(const RunReport& r);    // github-action-benchmark customBiggerIsBetter

}  // namespace gdn

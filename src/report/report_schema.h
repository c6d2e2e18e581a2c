// What a report file must be before any of it is believed (docs/report-schema.md "Reading"):
// bounded in size and depth, of a schema version this gdnbench reads, every field of the
// documented type, times finite and non-negative, names short and printable, each case key once.
// `compare`, `peers` and `run --resume` read every report through load_report, which applies it.
#pragma once

#include <cstddef>
#include <istream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace gdn {

struct RunReport;

constexpr std::size_t kMaxReportBytes = std::size_t(256) << 20;  // a 100k-sample sweep is a few MB
constexpr std::size_t kMaxReportDepth = 64;                      // a record nests 6 deep
constexpr std::size_t kMaxNameBytes = 1024;                      // case, variant, plan, mode, device, ...
constexpr std::size_t kMaxTextBytes = std::size_t(64) << 10;     // any other string (reasons, argv)

// Parses JSON text, refusing nesting deeper than kMaxReportDepth while the document is built.
// Throws nlohmann's parse_error for bad syntax, its out_of_range for a number no double holds
// (1e400), and input_error (exit 3) for the depth.
nlohmann::json parse_report_json(std::istream& in);

// schema_version is an integer from kOldestSchemaVersion to the one this gdnbench writes;
// input_error otherwise (a newer one says to use a newer gdnbench).
void check_schema_version(const nlohmann::json& j);

// Checks the parsed document against the schema; throws input_error "AT: what is wrong" with AT a
// JSON path (cases[3].timing.stats.median). Escapes control characters in free text (reasons,
// notes) in place, so none reaches a terminal.
void check_report_schema(nlohmann::json& j);

// Case keys (variant, shape, mode, device) given twice; input_error naming both records.
void check_unique_keys(const RunReport& r);

// What `run --resume` may keep: a `run` report of the same config (path and hash) in the same
// timing mode, every record of that mode. input_error naming the file and the difference.
void check_resumable(const RunReport& old, const std::string& path, const std::string& config_path,
                     const std::string& config_hash, const std::string& mode);

// `s` with control characters (C0, DEL, C1) written as \xNN, so text from a file cannot move the
// cursor, recolour or clear a terminal.
std::string escape_controls(std::string_view s);

}  // namespace gdn

// Reports as series: the runs of one source (gdnbench, or a peer harness), config and device,
// oldest first. The newest run of each series is what the dashboard's tables show; the earlier
// runs give the history, where each run is judged against the one before it as `compare` judges.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/report.h"

namespace gdn {

struct DashboardReport {
  std::string path;  // as given on the command line, named in the page's header
  RunReport report;
};

// Ours: a record of our own variants ("<op>/<variant>"); a peer harness names its variants
// "<peer>/<kernel>" (docs/report-schema.md).
bool is_ours(const CaseRecord& r);
// "gdnbench" for a report of our variants, else its peers' names joined by '+' ("fla",
// "fla+flashinfer"); "gdnbench" for a report without records.
std::string report_source(const RunReport& r);
// The machine a report ran on: its first CUDA device, else the host CPU.
std::string report_device(const RunReport& r);

struct ReportSeries {
  std::string source, config_path, config_hash, device;
  std::vector<std::size_t> runs;  // indices into the reports, oldest first (started_at, then given order)
};

// One series per (source, config hash, device), in the order their first report was given.
std::vector<ReportSeries> group_series(const std::vector<DashboardReport>& reports);

// The history of each series of ours with two runs or more: a line per (variant, shape, mode,
// device), the median at each run (null where it has none), each point's `compare` status against
// the run before, and the regressions (slower, or failed verification) listed.
nlohmann::json history_json(const std::vector<DashboardReport>& reports, const std::vector<ReportSeries>& series);

}  // namespace gdn

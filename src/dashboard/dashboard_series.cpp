#include "dashboard/dashboard_series.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "compare/compare.h"
#include "report/harness_origin.h"

namespace gdn {
namespace {

using json = nlohmann::json;

json number_or_null(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

// A run's label on the history axis: its date and commit.
std::string run_label(const RunReport& r) {
  const std::string date = r.started_at.size() >= 10 ? r.started_at.substr(0, 10) : r.started_at;
  return r.git_sha.empty() ? date : date + " " + r.git_sha;
}

using LineKey = std::tuple<std::string, std::string, std::string, std::string>;  // variant, shape, mode, device

}  // namespace

bool is_ours(const CaseRecord& r) { return r.variant.rfind(r.op() + "/", 0) == 0; }

std::string report_source(const RunReport& r) {
  std::set<std::string> peers;
  for (const auto& c : r.cases)
    if (!is_ours(c) && !from_harness(c)) peers.insert(c.variant.substr(0, c.variant.find('/')));  // run --peers: still ours
  if (peers.empty()) return "gdnbench";
  std::string s;
  for (const auto& p : peers) s += (s.empty() ? "" : "+") + p;
  return s;
}

std::string report_device(const RunReport& r) { return r.devices.empty() ? r.host.cpu_model : r.devices.front().name; }

std::vector<ReportSeries> group_series(const std::vector<DashboardReport>& reports) {
  std::vector<ReportSeries> out;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const RunReport& r = reports[i].report;
    ReportSeries key{report_source(r), r.config_path, r.config_hash, report_device(r), {}};
    auto it = std::find_if(out.begin(), out.end(), [&](const ReportSeries& s) {
      return s.source == key.source && s.config_hash == key.config_hash && s.device == key.device;
    });
    if (it == out.end()) it = out.insert(out.end(), key);
    it->runs.push_back(i);
  }
  for (auto& s : out)
    std::stable_sort(s.runs.begin(), s.runs.end(), [&](std::size_t a, std::size_t b) {
      return reports[a].report.started_at < reports[b].report.started_at;
    });
  return out;
}

json history_json(const std::vector<DashboardReport>& reports, const std::vector<ReportSeries>& series) {
  json out = json::array();
  for (const auto& s : series) {
    if (s.source != "gdnbench" || s.runs.size() < 2) continue;
    const std::size_t n = s.runs.size();
    // Every line has one point per run, null where that run has no time for it.
    std::vector<LineKey> order;
    std::map<LineKey, json> lines;
    for (std::size_t i : s.runs)
      for (const auto& c : reports[i].report.cases) {
        const LineKey k{c.variant, c.shape_key(), c.mode, c.device};
        if (lines.count(k)) continue;
        order.push_back(k);
        lines[k] = {{"variant", c.variant}, {"op", c.op()},         {"shape", c.shape_key()},
                    {"mode", c.mode},       {"device", c.device},   {"t", json(std::vector<json>(n, nullptr))},
                    {"status", std::vector<std::string>(n, "")}};
      }
    json runs = json::array(), regressions = json::array();
    for (std::size_t i = 0; i < n; ++i) {
      const DashboardReport& run = reports[s.runs[i]];
      runs.push_back({{"label", run_label(run.report)}, {"file", run.path}, {"git_sha", run.report.git_sha},
                      {"started_at", run.report.started_at}});
      for (const auto& c : run.report.cases) {
        json& line = lines.at(LineKey{c.variant, c.shape_key(), c.mode, c.device});
        const bool timed = c.status == CaseStatus::ok && c.timed && c.timing.stats.median > 0;
        line["t"][i] = timed ? number_or_null(c.timing.stats.median) : json(nullptr);
        line["status"][i] = c.status == CaseStatus::ok ? "" : std::string(to_string(c.status));
      }
      if (i == 0) continue;
      // The point's status is what `compare PREVIOUS THIS` says of its row (default threshold).
      const RunReport& prev = reports[s.runs[i - 1]].report;
      for (const auto& row : compare_reports(prev, run.report, CompareOptions{}).rows) {
        auto it = lines.find(LineKey{row.variant, row.shape_key, row.mode, row.device});
        if (it == lines.end()) continue;
        it->second["status"][i] = std::string(to_string(row.status));
        if (row.status != CompareStatus::slower && row.status != CompareStatus::failed_verification) continue;
        regressions.push_back({{"variant", row.variant}, {"shape", row.shape_key}, {"mode", row.mode}, {"device", row.device},
                               {"status", std::string(to_string(row.status))}, {"from", i - 1}, {"to", i},
                               {"base_s", number_or_null(row.base_s)}, {"new_s", number_or_null(row.new_s)},
                               {"change_pct", number_or_null(row.change_pct)}, {"threshold_pct", row.threshold_pct},
                               {"noise_pct", number_or_null(row.noise_pct)}, {"note", row.note}});
      }
    }
    json jl = json::array();
    for (const auto& k : order) jl.push_back(std::move(lines.at(k)));
    out.push_back({{"config_path", s.config_path}, {"config_hash", s.config_hash}, {"device", s.device}, {"runs", runs},
                   {"lines", jl}, {"regressions", regressions}, {"threshold_pct", CompareOptions{}.threshold_pct}});
  }
  return out;
}

}  // namespace gdn

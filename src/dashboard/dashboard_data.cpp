#include "dashboard/dashboard_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "report/harness_origin.h"
#include "report/peer_table.h"
#include "stats/stats.h"

namespace gdn {

const char kDashboardFlopConvention[] =
    "FLOP as gdnbench counts them (docs/method.md 5): prefill T*HV*(6KV + 4*64*(K+V)) (FlashQLA's count), "
    "decode and mtp 6*B*T*HV*K*V; FlashInfer's prefill convention (4*T*HV*K*V) is the rate's second figure. "
    "Bytes: every input read once and every output written once.";

namespace {

using json = nlohmann::json;

json number_or_null(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

bool measured(const CaseRecord& r) { return r.status == CaseStatus::ok && r.timed && r.timing.stats.median > 0; }

bool failed_verification(const CaseRecord& r) { return r.status == CaseStatus::verify_failed || (r.verify.ran && !r.verify.pass); }

std::string row_key(const CaseRecord& r) { return r.op() + "|" + r.shape_key() + "|" + r.mode; }

std::string heads_label(const Shape& s) { return fmt::format("{}/{}", s.h_qk, s.h_v); }

// The sequence set a point runs: prefill's packed sequences, the rows (and tokens) of a step.
std::string sequences_label(const Shape& s) {
  switch (s.op) {
    case OpKind::prefill: return s.seqlens_label();
    case OpKind::mtp: return fmt::format("B={} T={}", s.batch, s.tokens);
    default: return fmt::format("B={}", s.batch);
  }
}

// Why a record gives no number: its status and reason, the failing tensor for a failed check.
std::string why_not(const CaseRecord& r) {
  std::string s(to_string(r.status));
  if (failed_verification(r)) {
    s = "verify_failed";
    for (const auto& c : r.verify.checks)
      if (!c.pass) {
        s += fmt::format(": {} rel_l2 {:.2e} (tolerance {:.0e})", c.tensor, c.rel_l2, c.tolerance);
        break;
      }
  }
  if (!r.reason.empty()) s += (s.find(':') == std::string::npos ? ": " : "; ") + r.reason;
  return s;
}

json rate_json(const CaseRecord& r) {
  return {{"tflops", number_or_null(r.tflops)}, {"tflops_fi", number_or_null(r.tflops_fi)}, {"tbps", number_or_null(r.tbps)},
          {"roof", number_or_null(r.roofline_pct)}, {"roof_note", r.roofline_note}, {"peak_kind", r.peak.kind},
          {"bandwidth_bound", r.work.bandwidth_bound}};
}

json devices_json(const RunReport& r) {
  json out = json::array();
  for (const auto& d : r.devices)
    out.push_back({{"name", d.name}, {"driver", d.driver_version}, {"cuda", d.runtime_version}, {"cupti", d.cupti_version}});
  return out;
}

// The records the tables show: the newest run of each series, ours and the peers' apart. Peers
// newest first, so a point a newer peer run also measured takes the newer number.
struct Current {
  std::vector<CaseRecord> ours, peers;
  std::vector<std::size_t> ours_report;  // which report each of ours came from
};

Current current_records(const std::vector<DashboardReport>& reports, const std::vector<ReportSeries>& series) {
  Current cur;
  std::vector<std::size_t> peer_reports;
  for (const auto& s : series) {
    const std::size_t newest = s.runs.back();
    if (s.source != "gdnbench") {
      peer_reports.push_back(newest);
      continue;
    }
    for (const auto& c : reports[newest].report.cases) {
      if (from_harness(c)) {  // a run --peers report: its harnesses' records are peers
        cur.peers.push_back(c);
        continue;
      }
      cur.ours.push_back(c), cur.ours_report.push_back(newest);
    }
  }
  std::stable_sort(peer_reports.begin(), peer_reports.end(), [&](std::size_t a, std::size_t b) {
    return reports[a].report.started_at > reports[b].report.started_at;
  });
  for (std::size_t i : peer_reports)
    for (const auto& c : reports[i].report.cases) cur.peers.push_back(c);
  return cur;
}

json header_json(const std::vector<DashboardReport>& reports, const std::vector<ReportSeries>& series) {
  std::set<std::size_t> newest;
  for (const auto& s : series) newest.insert(s.runs.back());
  json out = json::array();
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const RunReport& r = reports[i].report;
    out.push_back({{"file", reports[i].path}, {"source", report_source(r)}, {"version", r.tool_version},
                   {"git_sha", r.git_sha}, {"command", r.command}, {"config_path", r.config_path},
                   {"config_hash", r.config_hash}, {"mode", r.mode}, {"started_at", r.started_at},
                   {"finished_at", r.finished_at}, {"complete", r.complete}, {"device", report_device(r)},
                   {"devices", devices_json(r)}, {"host_cpu", r.host.cpu_model}, {"records", r.cases.size()},
                   {"current", newest.count(i) > 0}});
  }
  return out;
}

// One op's table: every record of ours, each peer variant's cell at its point, the best verified
// peer and ours / best as `gdnbench peers` decides them (build_peer_sections).
json op_json(const std::string& op, const Current& cur, const std::vector<PeerSection>& sections) {
  const PeerSection* sec = nullptr;
  for (const auto& s : sections)
    if (s.op == op) sec = &s;
  std::map<const CaseRecord*, const PeerRow*> judged;
  if (sec)
    for (const auto& row : sec->rows) judged[row.ours] = &row;
  // point -> peer variant -> record (the first, newest, wins)
  std::map<std::string, std::map<std::string, const CaseRecord*>> peers_at;
  for (const auto& p : cur.peers)
    if (p.op() == op) peers_at[row_key(p)].emplace(p.variant, &p);

  std::set<std::string> column_set;
  for (const auto& r : cur.ours)
    if (r.op() == op)
      if (auto it = peers_at.find(row_key(r)); it != peers_at.end())
        for (const auto& [variant, rec] : it->second) column_set.insert(variant);
  const std::vector<std::string> columns(column_set.begin(), column_set.end());

  // The fastest of our measured variants at each point (the summaries and the heat map read it).
  std::map<std::string, const CaseRecord*> fastest;
  for (const auto& r : cur.ours)
    if (r.op() == op && measured(r)) {
      const CaseRecord*& f = fastest[row_key(r) + "|" + r.device];
      if (!f || r.timing.stats.median < f->timing.stats.median) f = &r;
    }

  json rows = json::array();
  for (std::size_t i = 0; i < cur.ours.size(); ++i) {
    const CaseRecord& r = cur.ours[i];
    if (r.op() != op) continue;
    json cells = json::array();
    const auto found = peers_at.find(row_key(r));
    for (const auto& col : columns) {
      const CaseRecord* p = nullptr;
      if (found != peers_at.end())
        if (auto f = found->second.find(col); f != found->second.end()) p = f->second;
      if (!p) {
        cells.push_back(nullptr);
        continue;
      }
      const bool number = measured(*p) && p->device == r.device;
      cells.push_back({{"t", number ? json(p->timing.stats.median) : json(nullptr)},
                       {"kernels_s", number_or_null(p->timing.kernels_sum_median_s)},
                       {"status", failed_verification(*p) ? "verify_failed" : std::string(to_string(p->status))},
                       {"why", measured(*p) ? (number ? "" : "measured on " + p->device + ", not compared") : why_not(*p)}});
    }
    const auto j = judged.find(&r);
    const PeerRow* pr = j == judged.end() ? nullptr : j->second;
    const int best = pr && pr->best >= 0 ? int(std::find(columns.begin(), columns.end(), sec->columns[pr->best]) - columns.begin()) : -1;
    const auto fast = fastest.find(row_key(r) + "|" + r.device);
    rows.push_back({{"variant", r.variant},
                    {"shape", r.shape_key()},
                    {"heads", heads_label(r.shape)},
                    {"seqs", sequences_label(r.shape)},
                    {"mode", r.mode},
                    {"device", r.device},
                    {"report", cur.ours_report[i]},
                    {"status", failed_verification(r) ? "verify_failed" : std::string(to_string(r.status))},
                    {"why", r.status == CaseStatus::ok && !failed_verification(r) ? "" : why_not(r)},
                    {"t", measured(r) ? json(r.timing.stats.median) : json(nullptr)},
                    {"noise", number_or_null(r.timing.stats.noise)},
                    {"timer", r.timer},
                    {"rate", rate_json(r)},
                    {"fastest", fast != fastest.end() && fast->second == &r},
                    {"peers", cells},
                    {"best", best},
                    {"best_s", pr ? number_or_null(pr->best_s) : json(nullptr)},
                    {"ratio", pr ? number_or_null(pr->ours_over_best) : json(nullptr)},
                    {"ratio_kernels", pr ? number_or_null(pr->ours_over_best_kernels) : json(nullptr)}});
  }
  json summary = nullptr;
  if (sec) {
    json per_peer = json::array();
    for (const auto& p : sec->per_peer)
      per_peer.push_back({{"peer", p.peer}, {"points", p.rows}, {"ahead", p.ahead}, {"geomean", number_or_null(p.geomean_ours_over)}});
    summary = {{"points", sec->points},   {"compared", sec->compared},
               {"peer_ahead", sec->peer_ahead}, {"geomean", number_or_null(sec->geomean_ours_over_best)},
               {"per_peer", per_peer},    {"other_devices", sec->other_devices}};
  }
  return {{"op", op}, {"columns", columns}, {"rows", rows}, {"summary", summary}};
}

// Prefill's ours / best peer over heads x sequence sets: at each point our fastest variant, the
// geometric mean over the points of a cell (they differ in the other axes: dtype, h0, ...).
json heatmap_json(const json& prefill) {
  std::map<std::pair<std::string, std::string>, std::vector<double>> cells;  // (heads, seqs) -> ratios
  std::set<std::string> heads, seqs;
  for (const auto& row : prefill.at("rows")) {
    if (!row.at("fastest").get<bool>() || row.at("ratio").is_null()) continue;
    const std::string h = row.at("heads"), s = row.at("seqs");
    cells[{h, s}].push_back(row.at("ratio").get<double>());
    heads.insert(h), seqs.insert(s);
  }
  // Heads by (h_qk, h_v) as numbers, sequence sets by label length then text ("1x2048" < "1x32768").
  std::vector<std::string> hv(heads.begin(), heads.end()), sv(seqs.begin(), seqs.end());
  auto heads_num = [](const std::string& h) {
    const auto slash = h.find('/');
    return std::pair{std::stoi(h.substr(0, slash)), std::stoi(h.substr(slash + 1))};
  };
  std::sort(hv.begin(), hv.end(), [&](const auto& a, const auto& b) { return heads_num(a) < heads_num(b); });
  std::sort(sv.begin(), sv.end(), [](const auto& a, const auto& b) { return std::pair{a.size(), a} < std::pair{b.size(), b}; });
  json jc = json::array();
  for (const auto& [k, ratios] : cells)
    jc.push_back({{"heads", k.first}, {"seqs", k.second}, {"ratio", geomean(ratios)}, {"points", ratios.size()}});
  return {{"heads", hv}, {"seqs", sv}, {"cells", jc}};
}

// Per device: the calibrated peaks any record or report gives for it, and every measured record
// as a roofline point (arithmetic intensity = FLOP / byte, achieved TFLOP/s).
json roofline_json(const std::vector<DashboardReport>& reports, const Current& cur) {
  std::map<std::string, std::map<std::string, double>> peaks;
  for (const auto& dr : reports) {
    const RunReport& r = dr.report;
    for (const auto& c : r.cases)
      if (!c.peak.kind.empty() && std::isfinite(c.peak.value) && c.peak.value > 0) peaks[c.device].emplace(c.peak.kind, c.peak.value);
    if (!r.devices.empty() && r.calibration.is_object())
      for (const char* kind : {"bf16_mma", "copy_bandwidth"})
        if (auto it = r.calibration.find(kind); it != r.calibration.end() && it->is_number() && it->get<double>() > 0)
          peaks[r.devices.front().name].emplace(kind, it->get<double>());
  }
  std::vector<std::string> devices;
  std::map<std::string, json> points;
  auto add = [&](const CaseRecord& c, bool ours) {
    if (!measured(c) || !std::isfinite(c.tflops) || !(c.work.bytes > 0)) return;
    if (!points.count(c.device)) devices.push_back(c.device), points[c.device] = json::array();
    points[c.device].push_back({{"variant", c.variant}, {"ours", ours}, {"op", c.op()}, {"shape", c.shape_key()},
                                {"ai", c.work.flops / c.work.bytes}, {"tflops", c.tflops}, {"tbps", number_or_null(c.tbps)},
                                {"roof", number_or_null(c.roofline_pct)}});
  };
  for (const auto& c : cur.ours) add(c, true);
  for (const auto& c : cur.peers) add(c, false);
  json out = json::array();
  for (const auto& d : devices) {
    json pk = json::object();
    for (const auto& [kind, v] : peaks[d]) pk[kind] = v;
    out.push_back({{"device", d}, {"peaks", pk}, {"points", points[d]}});
  }
  return out;
}

}  // namespace

json dashboard_data(const std::vector<DashboardReport>& reports) {
  const auto series = group_series(reports);
  const Current cur = current_records(reports, series);
  const auto sections = build_peer_sections(cur.ours, cur.peers);
  std::vector<std::string> ops;
  for (const auto& r : cur.ours)
    if (std::find(ops.begin(), ops.end(), r.op()) == ops.end()) ops.push_back(r.op());
  std::sort(ops.begin(), ops.end(), [](const std::string& a, const std::string& b) {
    auto rank = [](const std::string& op) { return op == "prefill" ? 0 : op == "decode" ? 1 : 2; };
    return rank(a) < rank(b);
  });
  json jops = json::array(), heatmap = nullptr;
  for (const auto& op : ops) {
    jops.push_back(op_json(op, cur, sections));
    if (op == "prefill") heatmap = heatmap_json(jops.back());
  }
  return {{"reports", header_json(reports, series)}, {"flop_convention", kDashboardFlopConvention}, {"ops", jops},
          {"roofline", roofline_json(reports, cur)},  {"heatmap", heatmap},
          {"history", history_json(reports, series)}};
}

}  // namespace gdn

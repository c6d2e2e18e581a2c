#include "report/baseline_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/registry.h"
#include "report/shape_column.h"
#include "report/text_table.h"
#include "stats/stats.h"

namespace gdn {
namespace {

bool measured(const CaseRecord& r) { return r.status == CaseStatus::ok && r.timed && r.timing.stats.median > 0; }

std::string point_key(const CaseRecord& r) { return r.op() + "|" + r.shape_key() + "|" + r.mode + "|" + r.device; }

std::string us(double s) { return std::isfinite(s) ? fmt::format("{:.2f}", s * 1e6) : "-"; }

struct Row {
  const CaseRecord* base;
  std::map<std::string, double> others;  // variant -> median seconds
  std::string best;
  double best_s = kNaN;
};

}  // namespace

std::string check_baseline(const std::string& baseline, const std::vector<CaseRecord>& peer_cases) {
  if (baseline.empty() || Registry::instance().find(baseline)) return "";
  for (const auto& c : peer_cases)
    if (c.variant == baseline) return "";
  return fmt::format("--baseline '{}' is no registered variant and no --peer report's (gdnbench list shows the "
                     "variants; a plugin's is plugin:<library>/<name>)",
                     baseline);
}

std::string format_baseline_table(const std::string& baseline, const std::vector<CaseRecord>& records, std::size_t width) {
  // point -> variant -> median of the first measured record (a later duplicate is ignored).
  std::map<std::string, std::map<std::string, double>> at;
  for (const auto& r : records)
    if (measured(r)) at[point_key(r)].emplace(r.variant, r.timing.stats.median);
  std::string out;
  for (const char* op : {"prefill", "decode", "mtp"}) {
    std::vector<Row> rows;
    std::vector<std::string> columns;
    for (const auto& r : records) {
      if (r.variant != baseline || r.op() != op || !measured(r)) continue;
      Row row{&r, {}, "", kNaN};
      for (const auto& [variant, s] : at[point_key(r)]) {
        if (variant == baseline) continue;
        row.others[variant] = s;
        if (std::find(columns.begin(), columns.end(), variant) == columns.end()) columns.push_back(variant);
        if (!(s >= row.best_s)) row.best = variant, row.best_s = s;
      }
      rows.push_back(std::move(row));
    }
    if (rows.empty()) continue;
    std::sort(columns.begin(), columns.end());
    std::vector<double> ratios;
    int faster = 0;
    for (const auto& row : rows)
      if (std::isfinite(row.best_s)) {
        ratios.push_back(row.base->timing.stats.median / row.best_s);
        faster += ratios.back() > 1.0;
      }
    auto build = [&](const ShapeColumn& shapes) {
      TextTable t;
      t.column("shape");
      t.column(baseline, TextTable::Align::right);
      for (const auto& c : columns) t.column(c, TextTable::Align::right);
      t.column("base/\nbest", TextTable::Align::right);
      for (const auto& row : rows) {
        std::vector<std::string> cells{shapes.cell(row.base->shape_key()), us(row.base->timing.stats.median)};
        // The fastest other variant is marked; the others keep a space there so the digits line up.
        for (const auto& c : columns) {
          auto it = row.others.find(c);
          cells.push_back(it == row.others.end() ? "- " : us(it->second) + (c == row.best ? "*" : " "));
        }
        cells.push_back(std::isfinite(row.best_s) ? fmt::format("{:.2f}x", row.base->timing.stats.median / row.best_s) : "-");
        t.row(std::move(cells));
      }
      return t;
    };
    std::vector<std::string> keys;
    for (const auto& row : rows) keys.push_back(row.base->shape_key());
    out += "\n" + fold(fmt::format("{}: {} against every other variant (median us on the same device; *: the fastest "
                                   "other; base/best > 1: another variant is faster)",
                                   op, baseline),
                       width);
    out += render_fitted(keys, "", width, build);
    out += fold(fmt::format("{}: another variant is faster on {} of {} points; {} / best other, geometric mean {}", op,
                            faster, ratios.size(), baseline,
                            ratios.empty() ? "-" : fmt::format("{:.2f}x", geomean(ratios))),
                width);
  }
  return out;
}

}  // namespace gdn

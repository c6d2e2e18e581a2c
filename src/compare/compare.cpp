// The baseline gate. A row is slower/faster only when the change beats both the threshold and
// the measured noise of the two medians; everything uncertain is "noisy" and never fails CI.
#include "compare/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "core/registry.h"
#include "report/shape_column.h"
#include "report/text_table.h"

namespace gdn {
namespace {

using Key = std::tuple<std::string, std::string, std::string, std::string, std::string>;

Key key_of(const CaseRecord& r) { return {r.op(), r.variant, r.shape_key(), r.mode, r.device}; }

// Noise in percent; unknown (n < 5, or null after a JSON round trip) counts as infinite.
double noise_pct(const CaseRecord& r) {
  const double n = r.timing.stats.noise;
  return std::isfinite(n) ? n * 100.0 : std::numeric_limits<double>::infinity();
}

bool failed_verification(const CaseRecord& r) {
  return r.status == CaseStatus::verify_failed || (r.verify.ran && !r.verify.pass);
}

// A record with a median to compare against.
bool has_timing(const CaseRecord& r) {
  return r.status == CaseStatus::ok && r.timed && std::isfinite(r.timing.stats.median) && r.timing.stats.median > 0;
}

// Why a record has no usable time, for the note.
std::string no_timing_reason(const CaseRecord& r) {
  if (r.status == CaseStatus::ok) return "not timed";
  std::string s(to_string(r.status));
  if (!r.reason.empty()) s += ": " + r.reason;
  return s;
}

CompareRow classify(const CaseRecord* base, const CaseRecord* next, const CompareOptions& opt) {
  const CaseRecord& any = next ? *next : *base;
  CompareRow row;
  row.op = any.op();
  row.variant = any.variant;
  row.shape_key = any.shape_key();
  row.mode = any.mode;
  row.device = any.device;
  row.threshold_pct = next && next->threshold_pct ? *next->threshold_pct : opt.threshold_pct;
  row.base_s = base && has_timing(*base) ? base->timing.stats.median : kNaN;
  row.new_s = next && next->timed ? next->timing.stats.median : kNaN;

  if (next && failed_verification(*next)) {
    row.status = CompareStatus::failed_verification;
    row.note = next->reason.empty() ? "new result failed verification" : next->reason;
    for (const auto& c : next->verify.checks)
      if (!c.pass) {
        row.note += fmt::format("; {} rel_l2 {:.2e}", c.tensor, c.rel_l2);
        break;
      }
    return row;
  }
  if (!next) {
    row.status = CompareStatus::missing;
    row.note = "absent from new report";
    return row;
  }
  if (!has_timing(*next)) {
    row.status = CompareStatus::missing;
    row.note = "new: " + no_timing_reason(*next);
    return row;
  }
  if (!base) {
    row.status = CompareStatus::added;
    row.note = "absent from base report";
    return row;
  }
  if (failed_verification(*base)) {
    row.status = CompareStatus::added;
    row.note = "base failed verification; nothing to compare against";
    return row;
  }
  if (!has_timing(*base)) {
    row.status = CompareStatus::added;
    row.note = "base: " + no_timing_reason(*base);
    return row;
  }

  row.change_pct = (row.new_s - row.base_s) / row.base_s * 100.0;
  const double nb = noise_pct(*base), nn = noise_pct(*next);
  // Two standard errors of the difference of two independent medians.
  row.noise_pct = 2.0 * std::sqrt(nb * nb + nn * nn);
  const bool clear = std::fabs(row.change_pct) > row.threshold_pct && std::fabs(row.change_pct) > row.noise_pct;
  const bool noisy_side = nb > row.threshold_pct / 2 || nn > row.threshold_pct / 2 || !base->timing.converged ||
                          !next->timing.converged;
  if (clear) {
    row.status = row.change_pct > 0 ? CompareStatus::slower : CompareStatus::faster;
  } else if (noisy_side) {
    row.status = CompareStatus::noisy;
    std::vector<std::string> why;
    if (nb > row.threshold_pct / 2) why.push_back(std::isinf(nb) ? "base noise unknown" : fmt::format("base noise {:.2f}%", nb));
    if (nn > row.threshold_pct / 2) why.push_back(std::isinf(nn) ? "new noise unknown" : fmt::format("new noise {:.2f}%", nn));
    if (!base->timing.converged) why.push_back("base stopped by " + base->timing.stop_reason);
    if (!next->timing.converged) why.push_back("new stopped by " + next->timing.stop_reason);
    row.note = fmt::format("{}", fmt::join(why, ", "));
  } else {
    row.status = CompareStatus::same;
  }
  return row;
}

// Worst first, so the rows that matter lead a long table.
int severity(CompareStatus s) {
  switch (s) {
    case CompareStatus::failed_verification: return 0;
    case CompareStatus::slower: return 1;
    case CompareStatus::noisy: return 2;
    case CompareStatus::missing: return 3;
    case CompareStatus::added: return 4;
    case CompareStatus::faster: return 5;
    case CompareStatus::same: return 6;
  }
  return 7;
}

std::vector<const CompareRow*> by_severity(const CompareResult& r) {
  std::vector<const CompareRow*> rows;
  for (const auto& row : r.rows) rows.push_back(&row);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const CompareRow* a, const CompareRow* b) { return severity(a->status) < severity(b->status); });
  return rows;
}

std::string summary(const CompareResult& r) {
  static const CompareStatus order[] = {CompareStatus::failed_verification, CompareStatus::slower,
                                        CompareStatus::faster,              CompareStatus::same,
                                        CompareStatus::noisy,               CompareStatus::missing,
                                        CompareStatus::added};
  std::vector<std::string> parts;
  for (auto s : order) {
    const auto n = std::count_if(r.rows.begin(), r.rows.end(), [&](const CompareRow& row) { return row.status == s; });
    if (n) parts.push_back(fmt::format("{} {}", n, to_string(s)));
  }
  if (parts.empty()) parts.push_back("no cases");
  return fmt::format("{}: {}", r.exit_code() == 0 ? "PASS" : "FAIL", fmt::join(parts, ", "));
}

std::string pct(double v, bool sign) {
  if (std::isnan(v)) return "";
  if (std::isinf(v)) return "inf";
  return sign ? fmt::format("{:+.2f}%", v) : fmt::format("{:.2f}%", v);
}

bool compared(const CompareRow& r) {
  return r.status == CompareStatus::same || r.status == CompareStatus::faster || r.status == CompareStatus::slower ||
         r.status == CompareStatus::noisy;
}

std::string markdown_cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

// Whether `variant` is selected by the include and exclude globs.
bool selected(const std::string& variant, const CompareOptions& opt) {
  auto hit = [&](const std::string& glob) { return variant_glob_match(glob, variant); };
  const bool included = opt.variants.empty() || std::any_of(opt.variants.begin(), opt.variants.end(), hit);
  return included && std::none_of(opt.exclude.begin(), opt.exclude.end(), hit);
}

}  // namespace

std::string_view to_string(CompareStatus s) {
  switch (s) {
    case CompareStatus::faster: return "faster";
    case CompareStatus::slower: return "slower";
    case CompareStatus::same: return "same";
    case CompareStatus::noisy: return "noisy";
    case CompareStatus::missing: return "missing";
    case CompareStatus::added: return "new";
    case CompareStatus::failed_verification: return "failed-verification";
  }
  return "?";
}

int CompareResult::exit_code() const { return regression || verify_failure ? 1 : 0; }

CompareResult compare_reports(const RunReport& base, const RunReport& next, const CompareOptions& opt) {
  // First record wins when a report holds the same key twice.
  std::map<Key, const CaseRecord*> base_by_key;
  for (const auto& r : base.cases)
    if (selected(r.variant, opt)) base_by_key.emplace(key_of(r), &r);

  CompareResult result;
  std::map<Key, bool> seen;
  for (const auto& r : next.cases) {
    if (!selected(r.variant, opt)) continue;
    const Key k = key_of(r);
    if (seen.count(k)) continue;
    seen[k] = true;
    auto it = base_by_key.find(k);
    const CaseRecord* b = it == base_by_key.end() ? nullptr : it->second;
    // Skipped on both sides (a variant this device cannot run): nothing to say.
    if (b && b->status == CaseStatus::skipped && r.status == CaseStatus::skipped) continue;
    result.rows.push_back(classify(b, &r, opt));
  }
  for (const auto& b : base.cases) {
    if (!selected(b.variant, opt)) continue;
    const Key k = key_of(b);
    if (seen.count(k)) continue;
    seen[k] = true;
    result.rows.push_back(classify(&b, nullptr, opt));
  }
  for (const auto& row : result.rows) {
    result.regression = result.regression || row.status == CompareStatus::slower;
    result.verify_failure = result.verify_failure || row.status == CompareStatus::failed_verification;
  }
  return result;
}

std::string format_compare_table(const CompareResult& r, std::size_t width) {
  using Align = TextTable::Align;
  const auto rows = by_severity(r);
  // A mode every row shares is said once above the table, and so is a device; several devices are
  // named in full, or as d1, d2, ... with a legend above the table when full names do not fit.
  const bool one_mode = std::all_of(rows.begin(), rows.end(), [&](const CompareRow* x) { return x->mode == rows.front()->mode; });
  std::vector<std::string> devices;
  for (const auto* row : rows)
    if (std::find(devices.begin(), devices.end(), row->device) == devices.end()) devices.push_back(row->device);
  auto device_label = [&](const std::string& d) {
    return fmt::format("d{}", std::find(devices.begin(), devices.end(), d) - devices.begin() + 1);
  };
  auto builder = [&](bool device_labels) {
    return [&, device_labels](const ShapeColumn& shapes) {
      TextTable t;
      t.column("status");
      t.column("variant");
      t.column("shape");
      if (!one_mode) t.column("mode");
      if (devices.size() > 1) t.column("device");
      t.column("base", Align::right);
      t.column("new", Align::right);
      t.column("change", Align::right);
      t.column("noise", Align::right);
      t.column("thresh", Align::right);
      t.column("note");
      for (const auto* row : rows) {
        const bool c = compared(*row);
        std::vector<std::string> cells{std::string(to_string(row->status)), row->variant, shapes.cell(row->shape_key)};
        if (!one_mode) cells.push_back(row->mode);
        if (devices.size() > 1) cells.push_back(device_labels ? device_label(row->device) : row->device);
        for (auto cell : {format_seconds(row->base_s), format_seconds(row->new_s), c ? pct(row->change_pct, true) : "",
                          c ? pct(row->noise_pct, false) : "", pct(row->threshold_pct, false), row->note})
          cells.push_back(std::move(cell));
        t.row(std::move(cells));
      }
      return t;
    };
  };
  std::string out;
  if (!rows.empty()) {
    std::vector<std::string> keys;
    for (const auto* row : rows) keys.push_back(row->shape_key);
    const bool device_labels = devices.size() > 1 && !fitting_form(keys, "", width, builder(false));
    std::vector<std::string> said;
    if (one_mode) said.push_back("mode " + rows.front()->mode);
    if (devices.size() == 1) said.push_back("device " + (devices.front().empty() ? std::string("(none)") : devices.front()));
    if (!said.empty()) out += fold(fmt::format("every row: {}", fmt::join(said, ", ")), width);
    if (device_labels)
      for (std::size_t i = 0; i < devices.size(); ++i) out += fold(fmt::format("d{}: {}", i + 1, devices[i]), width);
    out += render_fitted(keys, "", width, builder(device_labels));
  }
  return out + summary(r) + "\n";
}

std::string format_compare_markdown(const CompareResult& r) {
  std::string out = fmt::format("**gdnbench compare {}**\n\n", summary(r));
  if (r.rows.empty()) return out;
  out += "| status | variant | shape | mode | device | base | new | change | noise | threshold | note |\n";
  out += "|---|---|---|---|---|---:|---:|---:|---:|---:|---|\n";
  for (const auto* row : by_severity(r)) {
    const bool c = compared(*row);
    std::string status(to_string(row->status));
    if (row->status == CompareStatus::slower || row->status == CompareStatus::failed_verification)
      status = "**" + status + "**";
    out += fmt::format("| {} | {} | `{}` | {} | {} | {} | {} | {} | {} | {} | {} |\n", status,
                       markdown_cell(row->variant), markdown_cell(row->shape_key), markdown_cell(row->mode),
                       markdown_cell(row->device), format_seconds(row->base_s), format_seconds(row->new_s),
                       c ? pct(row->change_pct, true) : "", c ? pct(row->noise_pct, false) : "",
                       pct(row->threshold_pct, false), markdown_cell(row->note));
  }
  return out;
}

}  // namespace gdn

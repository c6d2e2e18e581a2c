// The baseline gate. A row is slower/faster only when the change beats both the threshold and
// the noise (change_test.h); everything uncertain is "noisy" and never fails CI. The gate refuses
// (exit 5) what it could not compare (gate.h).
#include "compare/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "compare/gate.h"
#include "core/errors.h"
#include "core/registry.h"
#include "report/shape_column.h"
#include "report/text_table.h"

namespace gdn {
namespace {

using Key = std::tuple<std::string, std::string, std::string, std::string, std::string>;

Key key_of(const CaseRecord& r) { return {r.op(), r.variant, r.shape_key(), r.mode, r.device}; }
// The same case on any device (--allow-device-change).
Key key_across_devices(const CaseRecord& r) { return {r.op(), r.variant, r.shape_key(), r.mode, ""}; }

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

bool host_timed(const CaseRecord* base, const CaseRecord* next) {
  return (base && base->timer == "host") || (next && next->timer == "host");
}

// The row's threshold: the case's own (from NEW's config) or --threshold, and for a record timed
// on the host at least --host-threshold.
double threshold_for(const CaseRecord* base, const CaseRecord* next, const CompareOptions& opt) {
  const double t = next && next->threshold_pct ? *next->threshold_pct : opt.threshold_pct;
  return host_timed(base, next) && opt.host_threshold_pct ? std::max(t, *opt.host_threshold_pct) : t;
}

CompareRow classify(const CaseRecord* base, const CaseRecord* next, const CompareOptions& opt) {
  const CaseRecord& any = next ? *next : *base;
  CompareRow row;
  row.op = any.op();
  row.variant = any.variant;
  row.shape_key = any.shape_key();
  row.mode = any.mode;
  row.device = base && next && base->device != next->device ? base->device + " -> " + next->device : any.device;
  row.in_base = base != nullptr;
  row.threshold_pct = threshold_for(base, next, opt);
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
  if (!base) {
    row.status = CompareStatus::added;
    row.note = has_timing(*next) ? "absent from base report" : "absent from base report; new: " + no_timing_reason(*next);
    return row;
  }
  if (!has_timing(*next)) {
    row.status = CompareStatus::missing;
    row.note = "new: " + no_timing_reason(*next);
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

  const ChangeVerdict v = judge_change(*base, *next, {row.threshold_pct, opt.min_repetitions, opt.alpha});
  row.status = v.status;
  row.base_s = v.base_s;
  row.new_s = v.new_s;
  row.change_pct = v.change_pct;
  row.noise_pct = v.noise_pct;
  row.p_value = v.p_value;
  row.note = v.note;
  // A CPU time moves with the host's load, which neither side's noise shows: said, not gated.
  if (host_timed(base, next) && !opt.host_threshold_pct &&
      (row.status == CompareStatus::slower || row.status == CompareStatus::faster)) {
    row.status = CompareStatus::noisy;
    row.note = "CPU time, not gated (--host-threshold gates it)" + (row.note.empty() ? "" : "; " + row.note);
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

// The gate's findings, one per line: refusals (exit 5) first, then what a flag accepted, then notes.
std::vector<std::string> gate_lines(const CompareResult& r) {
  std::vector<std::string> out;
  for (const auto& s : r.refused) out.push_back("refused: " + s);
  for (const auto& s : r.allowed) out.push_back("allowed: " + s);
  for (const auto& s : r.notes) out.push_back("note: " + s);
  return out;
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

}  // namespace

bool compare_selects(const std::string& variant, const CompareOptions& opt) {
  auto hit = [&](const std::string& glob) { return variant_glob_match(glob, variant); };
  const bool included = opt.variants.empty() || std::any_of(opt.variants.begin(), opt.variants.end(), hit);
  return included && std::none_of(opt.exclude.begin(), opt.exclude.end(), hit);
}

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

int CompareResult::exit_code() const {
  if (!refused.empty()) return kExitCannotCompare;
  return regression || verify_failure ? kExitRegression : kExitOk;
}

CompareResult compare_reports(const RunReport& base, const RunReport& next, const CompareOptions& opt) {
  // First record wins when a report holds the same key twice.
  std::map<Key, const CaseRecord*> base_by_key;
  for (const auto& r : base.cases)
    if (compare_selects(r.variant, opt)) base_by_key.emplace(key_of(r), &r);

  // Pairs in NEW's order, then BASE's leftovers. With --allow-device-change, a case that found no
  // partner on its own device takes the first leftover of the same case on another device.
  std::vector<std::pair<const CaseRecord*, const CaseRecord*>> pairs;  // (base, new)
  std::set<const CaseRecord*> used;
  std::set<Key> seen;
  for (const auto& r : next.cases) {
    if (!compare_selects(r.variant, opt) || !seen.insert(key_of(r)).second) continue;
    auto it = base_by_key.find(key_of(r));
    const CaseRecord* b = it == base_by_key.end() ? nullptr : it->second;
    if (b) used.insert(b);
    pairs.push_back({b, &r});
  }
  if (opt.allow_device_change) {
    std::map<Key, std::vector<const CaseRecord*>> leftovers;
    for (const auto& [k, b] : base_by_key)
      if (!used.count(b)) leftovers[key_across_devices(*b)].push_back(b);
    for (auto& [b, r] : pairs) {
      if (b) continue;
      auto& list = leftovers[key_across_devices(*r)];
      if (list.empty()) continue;
      b = list.front();
      list.erase(list.begin());
      used.insert(b);
    }
  }
  for (const auto& b : base.cases)
    if (compare_selects(b.variant, opt) && !used.count(&b) && base_by_key[key_of(b)] == &b) pairs.push_back({&b, nullptr});

  CompareResult result;
  for (const auto& [b, r] : pairs) {
    // Skipped on both sides (a variant this device cannot run): nothing to say.
    if (b && r && b->status == CaseStatus::skipped && r->status == CaseStatus::skipped) continue;
    result.rows.push_back(classify(b, r, opt));
  }
  for (const auto& row : result.rows) {
    result.regression = result.regression || row.status == CompareStatus::slower;
    result.verify_failure = result.verify_failure || row.status == CompareStatus::failed_verification;
  }
  apply_gate(base, next, opt, result);
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
  out += summary(r) + "\n";
  for (const auto& line : gate_lines(r)) out += fold(line, width);
  return out;
}

std::string format_compare_markdown(const CompareResult& r) {
  std::string out = fmt::format("**gdnbench compare {}**\n\n", summary(r));
  for (const auto& line : gate_lines(r)) out += "- " + markdown_cell(line) + "\n";
  if (!r.refused.empty() || !r.allowed.empty() || !r.notes.empty()) out += "\n";
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

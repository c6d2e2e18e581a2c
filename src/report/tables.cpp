// The terminal view of a run: one aligned table per op, skips and failures summarised below,
// fitted to the terminal's width (report/shape_column.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "report/report.h"
#include "report/shape_column.h"
#include "report/text_table.h"
#include "timing/repetitions.h"

namespace gdn {
namespace {

using Align = TextTable::Align;

std::string fixed_or_blank(double v, const char* spec) {
  return std::isfinite(v) ? fmt::format(fmt::runtime(spec), v) : "";
}

std::string noise_cell(const CaseRecord& r) {
  if (!r.timed) return "";
  const double n = r.timing.stats.noise;
  if (std::isinf(n)) return "inf";
  return fixed_or_blank(n * 100, "{:.2f}%");
}

double worst_rel_l2(const Verification& v) {
  double worst = kNaN;
  for (const auto& c : v.checks)
    if (std::isfinite(c.rel_l2) && !(c.rel_l2 <= worst)) worst = c.rel_l2;
  return worst;
}

std::string verify_cell(const Verification& v) {
  if (!v.ran) return "skip";
  return v.pass ? "PASS" : "FAIL";
}

std::string status_cell(const CaseRecord& r) {
  std::string s(to_string(r.status));
  if (r.timed && !r.timing.converged && !r.timing.stop_reason.empty()) s += " (" + r.timing.stop_reason + ")";
  if (r.throttled) s += " throttled";
  return s;
}

// The table already names the op, so "decode/cpu" shows as "cpu".
std::string short_variant(const CaseRecord& r) {
  const std::string prefix = r.op() + "/";
  return r.variant.rfind(prefix, 0) == 0 ? r.variant.substr(prefix.size()) : r.variant;
}

// Why a failed check failed, in one line.
std::string check_failure(const TensorCheck& c) {
  if (c.tensor == "pool_scale")  // a count of rows, not an error (docs/method.md 4)
    return fmt::format("pool_scale: {} of {} written fp8 rows off the scale rule (a power of two, largest code 224-448)",
                       fixed_or_blank(c.max_abs, "{:.0f}"), c.checked);
  std::string s = fmt::format("{}: rel_l2 {} (tolerance {})", c.tensor, fixed_or_blank(c.rel_l2, "{:.2e}"),
                              fixed_or_blank(c.tolerance, "{:.1e}"));
  if (c.nonfinite) s += fmt::format(", {} non-finite", c.nonfinite);
  if (c.unwritten) s += fmt::format(", {} unwritten", c.unwritten);
  if (c.untouched_diff) s += fmt::format(", {} changed in untouched slots", c.untouched_diff);
  return s;
}

// Kernel names can be long template signatures; the start says which kernel it is.
std::string stage_name(std::string name) {
  constexpr std::size_t kMaxStageName = 60;
  if (name.rfind("void ", 0) == 0) name.erase(0, 5);
  if (name.size() > kMaxStageName) name = name.substr(0, kMaxStageName - 3) + "...";
  return name;
}

// A figure above the peak is withheld: the cell says so and a line under the row says why.
std::string roofline_cell(const CaseRecord& r) {
  return r.roofline_note.empty() ? fixed_or_blank(r.roofline_pct, "{:.1f}") : ">peak*";
}

// --repetitions: how many, and how far apart their medians lie (the noise between runs).
std::string repetitions_cell(const CaseRecord& r) {
  const double spread = repetition_spread(r.timing);
  return r.timed && std::isfinite(spread) ? fmt::format("{} ({:.0f}%)", r.timing.repetitions.size(), spread * 100) : "";
}

// 8-bit pools: the drift of the quantized recurrence from the fp32 one at the longest run, state
// and outputs; the line under the row gives every length.
std::string drift_cell(const CaseRecord& r) {
  if (r.drift.empty()) return "";
  return fmt::format("S {} o {}", fixed_or_blank(r.drift.state_rel_l2.back(), "{:.1e}"),
                     fixed_or_blank(r.drift.o_rel_l2.back(), "{:.1e}"));
}

std::string drift_line(const StateDrift& d) {
  std::string s = fmt::format("    drift vs fp32 ({} heads, {} rows):", d.heads, d.rows);
  for (std::size_t i = 0; i < d.tokens.size(); ++i)
    s += fmt::format("{} {}k: state {} o {}", i ? "," : "", d.tokens[i] / 1024, fixed_or_blank(d.state_rel_l2[i], "{:.1e}"),
                     fixed_or_blank(d.o_rel_l2[i], "{:.1e}"));
  return s;
}

void add_case(TextTable& t, const CaseRecord& r, const ShapeColumn& shapes, bool breakdown, bool repetitions,
              bool drift) {
  const bool timed = r.timed;
  std::vector<std::string> cells{short_variant(r), shapes.cell(r.shape_key()), timed ? format_seconds(r.timing.stats.median) : "",
                                 noise_cell(r)};
  if (repetitions) cells.push_back(repetitions_cell(r));
  for (auto cell : {fixed_or_blank(r.tflops, "{:.3g}"), fixed_or_blank(r.tbps, "{:.3g}"), roofline_cell(r),
                    verify_cell(r.verify), fixed_or_blank(worst_rel_l2(r.verify), "{:.1e}"), status_cell(r)})
    cells.push_back(std::move(cell));
  if (drift) cells.push_back(drift_cell(r));
  if (breakdown) cells.push_back(r.plan.substr(0, r.plan.find(" (")));  // the budget stays in the JSON
  t.row(std::move(cells));
  if (!r.roofline_note.empty()) t.line("    * roof%: " + r.roofline_note);
  if (!r.drift.empty()) t.line(drift_line(r.drift));
  for (const auto& c : r.verify.checks)
    if (r.verify.ran && !c.pass) t.line("    FAIL " + check_failure(c));
  if (r.status == CaseStatus::error && !r.reason.empty()) t.line("    error: " + r.reason);
  // Stages as rows of their own, so their medians line up under the case's median.
  if (breakdown && timed)
    for (const auto& k : r.timing.kernels)
      t.row({"", fmt::format("  - {} ({:.1f}%)", stage_name(k.name), k.share * 100), format_seconds(k.median_s)});
}

TextTable case_table(const std::vector<const CaseRecord*>& shown, const ShapeColumn& shapes, bool breakdown) {
  TextTable t;
  t.column("variant");
  t.column("shape");
  t.column("median", Align::right);
  t.column("noise", Align::right);
  const bool repetitions =
      std::any_of(shown.begin(), shown.end(), [](const CaseRecord* r) { return r->timing.repetitions.size() > 1; });
  if (repetitions) t.column("reps", Align::right);
  t.column("TFLOPS", Align::right);
  t.column("TB/s", Align::right);
  t.column("roof%", Align::right);
  t.column("verify");
  t.column("rel-L2", Align::right);
  t.column("status");
  const bool drift = std::any_of(shown.begin(), shown.end(), [](const CaseRecord* r) { return !r->drift.empty(); });
  if (drift) t.column("drift@128k");
  if (breakdown) t.column("plan");
  for (const auto* r : shown) add_case(t, *r, shapes, breakdown, repetitions, drift);
  return t;
}

// One line per distinct reason, with the variants it holds back and how often: "sm90 x6,
// cuda_simple x3: no CUDA device: ..." (a missing driver is said once, not once per variant);
// folded to `width`.
std::string skipped_lines(const std::vector<const CaseRecord*>& skipped, std::size_t width) {
  std::vector<std::string> reasons;
  std::map<std::string, std::vector<std::pair<std::string, int>>> variants;  // reason -> (variant, count)
  for (const auto* r : skipped) {
    const std::string reason = r->reason.empty() ? "(no reason given)" : r->reason;
    auto& held = variants[reason];
    if (held.empty()) reasons.push_back(reason);
    auto it = std::find_if(held.begin(), held.end(), [&](const auto& v) { return v.first == short_variant(*r); });
    if (it == held.end()) held.emplace_back(short_variant(*r), 1);
    else ++it->second;
  }
  std::string out = fmt::format("  skipped ({}):\n", skipped.size());
  for (const auto& reason : reasons) {
    std::string who;
    for (const auto& [variant, n] : variants[reason]) who += fmt::format("{}{} x{}", who.empty() ? "" : ", ", variant, n);
    out += fold(fmt::format("    {}: {}", who, reason), width);
  }
  return out;
}

}  // namespace

std::string format_tables(const std::vector<CaseRecord>& cases, bool breakdown, std::size_t width) {
  std::string out;
  for (OpKind op : {OpKind::prefill, OpKind::decode, OpKind::mtp}) {
    std::vector<const CaseRecord*> shown, skipped;
    for (const auto& r : cases)
      if (r.shape.op == op) (r.status == CaseStatus::skipped ? skipped : shown).push_back(&r);
    if (shown.empty() && skipped.empty()) continue;

    if (!out.empty()) out += "\n";
    out += fmt::format("{} ({} case{}, {} skipped)\n", to_string(op), shown.size(), shown.size() == 1 ? "" : "s",
                       skipped.size());
    if (!shown.empty()) {
      std::vector<std::string> keys;
      for (const auto* r : shown) keys.push_back(r->shape_key());
      out += render_fitted(keys, "  ", width, [&](const ShapeColumn& shapes) { return case_table(shown, shapes, breakdown); });
    }
    if (!skipped.empty()) out += skipped_lines(skipped, width);
  }
  return out;
}

}  // namespace gdn

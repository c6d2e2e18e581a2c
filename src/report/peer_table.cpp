#include "report/peer_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "report/shape_column.h"
#include "report/text_table.h"
#include "stats/stats.h"

namespace gdn {
namespace {

std::string us(double s) { return std::isfinite(s) ? fmt::format("{:.2f}", s * 1e6) : "-"; }

std::string row_key(const CaseRecord& r) { return r.op() + "|" + r.shape_key() + "|" + r.mode; }

bool measured(const CaseRecord& r) { return r.status == CaseStatus::ok && r.timed && r.timing.stats.median > 0; }

// A peer's cell: its median when verified and timed, else why there is no number.
std::string cell(const CaseRecord* p) {
  if (!p) return "-";
  if (measured(*p)) return us(p->timing.stats.median);
  switch (p->status) {
    case CaseStatus::skipped: return "skip";
    case CaseStatus::verify_failed: return "FAIL";
    case CaseStatus::error: return "error";
    default: return "-";
  }
}

std::string ratio(double x) { return std::isfinite(x) ? fmt::format("{:.2f}x", x) : "-"; }

// Ours as its op is judged: TFLOP/s in both conventions where the work model has FLOPs (prefill),
// else TB/s.
std::string our_rate(const CaseRecord& r) {
  if (r.op() == "prefill" && std::isfinite(r.tflops))
    return fmt::format("{:.0f} / {:.0f} TFLOP/s", r.tflops, std::isfinite(r.tflops_fi) ? r.tflops_fi : r.tflops);
  return std::isfinite(r.tbps) ? fmt::format("{:.2f} TB/s", r.tbps) : "-";
}
std::string roof(const CaseRecord& r) { return std::isfinite(r.roofline_pct) ? fmt::format("{:.1f}", r.roofline_pct) : "-"; }


std::string markdown_cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// Ours / one peer alone, from its ratios over the points it measured on our device (span, and
// summed kernel time where it has one).
PeerSummary summarize_peer(const std::string& peer, const std::vector<double>& spans, const std::vector<double>& kernels) {
  PeerSummary s;
  s.peer = peer;
  s.rows = int(spans.size()), s.rows_kernels = int(kernels.size());
  s.ahead = int(std::count_if(spans.begin(), spans.end(), [](double x) { return x > 1.0; }));
  s.ahead_kernels = int(std::count_if(kernels.begin(), kernels.end(), [](double x) { return x > 1.0; }));
  s.geomean_ours_over = geomean(spans), s.geomean_ours_over_kernels = geomean(kernels);
  if (!kernels.empty()) s.worst_ours_over_kernels = *std::max_element(kernels.begin(), kernels.end());
  return s;
}

std::string summary_line(const PeerSummary& s) {
  std::string line = fmt::format("{}: ours / it {} over {} points, it is faster on {}", s.peer, ratio(s.geomean_ours_over), s.rows,
                                 s.ahead);
  if (s.rows_kernels > 0)
    line += fmt::format("; ours / its kernel sums {} over {} points, below ours on {}, at most {}", ratio(s.geomean_ours_over_kernels),
                        s.rows_kernels, s.ahead_kernels, ratio(s.worst_ours_over_kernels));
  return line;
}

}  // namespace

std::vector<PeerSection> build_peer_sections(const std::vector<CaseRecord>& ours, const std::vector<CaseRecord>& peers) {
  // key -> variant -> first record of that variant (a later report's duplicate is ignored).
  std::map<std::string, std::map<std::string, const CaseRecord*>> by_key;
  for (const auto& p : peers) by_key[row_key(p)].emplace(p.variant, &p);

  std::vector<PeerSection> sections;
  auto section_of = [&](const std::string& op) -> PeerSection& {
    for (auto& s : sections)
      if (s.op == op) return s;
    sections.emplace_back().op = op;
    return sections.back();
  };
  for (const auto& r : ours) {
    // Rows timed on the host CPU have no GPU peer to stand beside.
    if (!measured(r) || r.timer == "host") continue;
    auto it = by_key.find(row_key(r));
    if (it == by_key.end()) continue;
    PeerSection& sec = section_of(r.op());
    for (const auto& [variant, rec] : it->second)
      if (std::find(sec.columns.begin(), sec.columns.end(), variant) == sec.columns.end()) sec.columns.push_back(variant);
    PeerRow row;
    row.ours = &r;
    sec.rows.push_back(row);
  }
  // A peer record that gives a number beside ours: verified, timed, on our device.
  auto comparable = [](const CaseRecord* p, const PeerRow& row) {
    return p && measured(*p) && p->device == row.ours->device;
  };
  for (auto& sec : sections) {
    std::sort(sec.columns.begin(), sec.columns.end());
    for (auto& row : sec.rows) {
      const double ours = row.ours->timing.stats.median;
      const auto& found = by_key.at(row_key(*row.ours));
      for (std::size_t c = 0; c < sec.columns.size(); ++c) {
        auto f = found.find(sec.columns[c]);
        const CaseRecord* p = f == found.end() ? nullptr : f->second;
        row.peers.push_back(p);
        if (!p || !measured(*p)) continue;
        if (!comparable(p, row)) {
          if (std::find(sec.other_devices.begin(), sec.other_devices.end(), p->device) == sec.other_devices.end())
            sec.other_devices.push_back(p->device);
          continue;  // another GPU's number is no comparison
        }
        const double t = p->timing.stats.median;
        if (row.best < 0 || t < row.best_s) row.best = int(c), row.best_s = t;
        const double k = p->timing.kernels_sum_median_s;
        if (std::isfinite(k) && k > 0 && (!std::isfinite(row.best_kernels_s) || k < row.best_kernels_s)) row.best_kernels_s = k;
      }
      if (row.best >= 0) row.ours_over_best = ours / row.best_s;
      if (std::isfinite(row.best_kernels_s)) row.ours_over_best_kernels = ours / row.best_kernels_s;
      sec.has_kernel_sums = sec.has_kernel_sums || std::isfinite(row.best_kernels_s);
    }
    // The summaries count points, not rows: at a point several of our variants may have a row
    // (prefill/sm90 and prefill/sm75_legacy), and "ours" there is the fastest of them.
    std::map<std::string, const PeerRow*> fastest;
    for (const auto& row : sec.rows) {
      const PeerRow*& f = fastest[row_key(*row.ours)];
      if (!f || row.ours->timing.stats.median < f->ours->timing.stats.median) f = &row;
    }
    std::vector<double> ratios, ratios_kernels;
    std::vector<std::vector<double>> peer_spans(sec.columns.size()), peer_kernels(sec.columns.size());
    for (const auto& row : sec.rows) {
      if (fastest.at(row_key(*row.ours)) != &row) continue;
      ++sec.points;
      const double ours = row.ours->timing.stats.median;
      for (std::size_t c = 0; c < row.peers.size(); ++c) {
        const CaseRecord* p = row.peers[c];
        if (!comparable(p, row)) continue;
        peer_spans[c].push_back(ours / p->timing.stats.median);
        const double k = p->timing.kernels_sum_median_s;
        if (std::isfinite(k) && k > 0) peer_kernels[c].push_back(ours / k);
      }
      sec.compared += row.best >= 0;
      sec.compared_kernels += std::isfinite(row.ours_over_best_kernels);
      sec.peer_ahead += row.best >= 0 && row.ours_over_best > 1.0;
      sec.peer_ahead_kernels += row.ours_over_best_kernels > 1.0;
      if (std::isfinite(row.ours_over_best) && row.ours_over_best > 0) ratios.push_back(row.ours_over_best);
      if (std::isfinite(row.ours_over_best_kernels) && row.ours_over_best_kernels > 0)
        ratios_kernels.push_back(row.ours_over_best_kernels);
    }
    sec.geomean_ours_over_best = geomean(ratios);
    sec.geomean_ours_over_best_kernels = geomean(ratios_kernels);
    for (std::size_t c = 0; c < sec.columns.size(); ++c)
      sec.per_peer.push_back(summarize_peer(sec.columns[c], peer_spans[c], peer_kernels[c]));
  }
  return sections;
}

namespace {

// "flashinfer/chunk" as a two-line header; the section already names the op, so ours drops it.
std::string two_line_header(const std::string& variant) {
  const auto slash = variant.find('/');
  return slash == std::string::npos ? variant : variant.substr(0, slash) + "\n" + variant.substr(slash + 1);
}
std::string without_op(const CaseRecord& r) {
  const std::string prefix = r.op() + "/";
  return r.variant.rfind(prefix, 0) == 0 ? r.variant.substr(prefix.size()) : r.variant;
}

TextTable peer_text_table(const PeerSection& sec, const ShapeColumn& shapes) {
  using Align = TextTable::Align;
  TextTable t;
  t.column("variant");
  t.column("shape");
  t.column("ours", Align::right);
  for (const auto& c : sec.columns) t.column(two_line_header(c), Align::right);
  t.column("ours/\nbest", Align::right);
  if (sec.has_kernel_sums) {
    t.column("peer\nkernels", Align::right);
    t.column("ours/\nkernels", Align::right);
  }
  for (const auto& row : sec.rows) {
    std::vector<std::string> cells{without_op(*row.ours), shapes.cell(row.ours->shape_key()), us(row.ours->timing.stats.median)};
    // The fastest verified peer is marked; the others keep a space there so the digits line up.
    for (std::size_t c = 0; c < row.peers.size(); ++c) {
      const std::string v = cell(row.peers[c]);
      cells.push_back(int(c) == row.best ? v + "*" : v + " ");
    }
    cells.push_back(ratio(row.ours_over_best));
    if (sec.has_kernel_sums) {
      cells.push_back(us(row.best_kernels_s));
      cells.push_back(ratio(row.ours_over_best_kernels));
    }
    t.row(cells);
  }
  return t;
}

}  // namespace

std::string format_peer_table(const std::vector<CaseRecord>& ours, const std::vector<CaseRecord>& peers, std::size_t width) {
  const auto sections = build_peer_sections(ours, peers);
  if (sections.empty()) return "\n(no shape of this run is in the peer reports)\n";
  std::string out;
  for (const auto& sec : sections) {
    out += "\n" + fold(fmt::format("{} against the peers (median us; *: the fastest verified peer; ours/best > 1: a peer "
                                   "is faster; the summaries below count each point once, at our fastest variant)",
                                   sec.op),
                       width);
    std::vector<std::string> keys;
    for (const auto& row : sec.rows) keys.push_back(row.ours->shape_key());
    out += render_fitted(keys, "", width, [&](const ShapeColumn& shapes) { return peer_text_table(sec, shapes); });
    out += fold(fmt::format("{}: a peer is faster on {} of {} points; ours / best peer, geometric mean {}", sec.op,
                            sec.peer_ahead, sec.compared, ratio(sec.geomean_ours_over_best)),
                width);
    if (sec.has_kernel_sums)
      out += fold(fmt::format("{}: a peer's summed kernel time (the host's gaps between its kernels left out) is below "
                              "ours on {} of {} points; ours / best peer kernels, geometric mean {}",
                              sec.op, sec.peer_ahead_kernels, sec.compared_kernels, ratio(sec.geomean_ours_over_best_kernels)),
                  width);
    for (const auto& p : sec.per_peer) out += fold(fmt::format("{}: {}", sec.op, summary_line(p)), width);
    for (const auto& d : sec.other_devices)
      out += fold(fmt::format("warning: peer records from another device ({}) are not compared", d), width);
  }
  return out;
}

std::string format_peer_markdown(const std::vector<CaseRecord>& ours, const std::vector<CaseRecord>& peers) {
  const auto sections = build_peer_sections(ours, peers);
  if (sections.empty()) return "(no shape of this run is in the peer reports)\n";
  std::string out;
  for (const auto& sec : sections) {
    std::vector<const PeerRow*> rows;
    for (const auto& r : sec.rows) rows.push_back(&r);
    // Rows where a peer is faster first (largest ours/best first), then the others in run order.
    std::stable_sort(rows.begin(), rows.end(), [](const PeerRow* a, const PeerRow* b) {
      const bool ahead_a = a->ours_over_best > 1.0, ahead_b = b->ours_over_best > 1.0;
      if (ahead_a != ahead_b) return ahead_a;
      return ahead_a && a->ours_over_best > b->ours_over_best;
    });
    out += fmt::format("**{}**: a peer is faster on {} of {} points (ours: the fastest of our variants at each; rows where a peer "
                       "is faster listed first); ours / best peer, geometric mean {}; median us, `skip` / `FAIL` / "
                       "`error`: no verified peer number\n\n",
                       sec.op, sec.peer_ahead, sec.compared, ratio(sec.geomean_ours_over_best));
    if (sec.has_kernel_sums)
      out += fmt::format("A peer's summed kernel time (its report's `kernels_sum_median_s`: the host's gaps between "
                         "its kernels left out) is below our whole span on {} of {} points (`peer kernels`, "
                         "`ours / kernels`; geometric mean {}).\n\n",
                         sec.peer_ahead_kernels, sec.compared_kernels, ratio(sec.geomean_ours_over_best_kernels));
    if (!sec.per_peer.empty()) {
      out += "| peer | points | ours / peer (span) | peer faster | ours / peer kernels | peer kernels faster | worst ours / "
             "kernels |\n|---|---:|---:|---:|---:|---:|---:|\n";
      for (const auto& p : sec.per_peer)
        out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", markdown_cell(p.peer), p.rows, ratio(p.geomean_ours_over),
                           p.ahead, p.rows_kernels ? ratio(p.geomean_ours_over_kernels) : "-",
                           p.rows_kernels ? std::to_string(p.ahead_kernels) : "-", ratio(p.worst_ours_over_kernels));
      out += "\n";
    }
    out += "| variant | shape | ours |";
    std::string rule = "|---|---|---:|";
    for (const auto& c : sec.columns) out += fmt::format(" {} |", markdown_cell(c)), rule += "---:|";
    out += " best peer | ours / best |";
    rule += "---|---:|";
    if (sec.has_kernel_sums) out += " peer kernels | ours / kernels |", rule += "---:|---:|";
    out += " ours rate | roof % |", rule += "---:|---:|";
    out += "\n" + rule + "\n";
    for (const auto* row : rows) {
      out += fmt::format("| {} | `{}` | {} |", markdown_cell(row->ours->variant), markdown_cell(row->ours->shape_key()),
                         us(row->ours->timing.stats.median));
      for (std::size_t c = 0; c < row->peers.size(); ++c) {
        const std::string v = cell(row->peers[c]);
        out += fmt::format(" {} |", int(c) == row->best ? "**" + v + "**" : v);
      }
      const std::string r = ratio(row->ours_over_best);
      out += fmt::format(" {} | {} |", row->best >= 0 ? markdown_cell(sec.columns[row->best]) : "-",
                         row->ours_over_best > 1.0 ? "**" + r + "**" : r);
      if (sec.has_kernel_sums) {
        const std::string rk = ratio(row->ours_over_best_kernels);
        out += fmt::format(" {} | {} |", us(row->best_kernels_s), row->ours_over_best_kernels > 1.0 ? "**" + rk + "**" : rk);
      }
      out += fmt::format(" {} | {} |", our_rate(*row->ours), roof(*row->ours));
      out += "\n";
    }
    for (const auto& d : sec.other_devices)
      out += fmt::format("\nPeer records from another device ({}) are not compared.\n", markdown_cell(d));
    out += "\n";
  }
  return out;
}

}  // namespace gdn

#include "report/peer_table.h"

#include <fmt/format.h>
#include <map>

namespace gdn {
namespace {
std::string us(double s) { return std::isfinite(s) ? fmt::format("{:.2f}", s * 1e6) : "-"; }
}  // namespace

std::string format_peer_table(const std::vector<CaseRecord>& ours, const std::vector<CaseRecord>& peer) {
  std::multimap<std::string, const CaseRecord*> by_key;
  for (auto& p : peer)
    if (p.status == CaseStatus::ok && p.timed) by_key.emplace(p.op() + "|" + p.shape_key() + "|" + p.mode, &p);
  std::string out = fmt::format("\n{:<18} {:<72} {:>11} {:<28} {:>11} {:>8}\n", "variant", "shape", "ours us", "peer",
                                "peer us", "speedup");
  int rows = 0;
  for (auto& r : ours) {
    if (r.status != CaseStatus::ok || !r.timed) continue;
    auto range = by_key.equal_range(r.op() + "|" + r.shape_key() + "|" + r.mode);
    for (auto it = range.first; it != range.second; ++it) {
      const double a = r.timing.stats.median, b = it->second->timing.stats.median;
      out += fmt::format("{:<18} {:<72} {:>11} {:<28} {:>11} {:>7.2f}x\n", r.variant, r.shape_key(), us(a),
                         it->second->variant, us(b), b / a);
      ++rows;
    }
  }
  if (rows == 0) out += "(no shape of this run is in the peer report)\n";
  return out;
}

}  // namespace gdn

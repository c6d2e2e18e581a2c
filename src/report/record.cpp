#include "report/record.h"

#include <cmath>
#include <fmt/format.h>

namespace gdn {

std::string_view to_string(CaseStatus s) {
  switch (s) {
    case CaseStatus::ok: return "ok";
    case CaseStatus::skipped: return "skipped";
    case CaseStatus::verify_failed: return "verify_failed";
    case CaseStatus::error: return "error";
  }
  return "?";
}

void compute_metrics(CaseRecord& r) {
  r.tflops = r.tflops_fi = r.tbps = r.roofline_pct = kNaN;
  r.roofline_note.clear();
  const double median = r.timing.stats.median;
  if (!r.timed || !std::isfinite(median) || median <= 0) return;

  const double flops_per_s = r.work.flops / median;
  const double bytes_per_s = r.work.bytes / median;
  r.tflops = flops_per_s / 1e12;
  r.tflops_fi = r.work.flops_fi / median / 1e12;
  r.tbps = bytes_per_s / 1e12;

  if (!std::isfinite(r.peak.value) || r.peak.value <= 0) return;
  const bool bandwidth = r.peak.kind == "copy_bandwidth" || r.peak.kind == "host_bandwidth";
  if (!bandwidth && r.peak.kind != "bf16_mma") return;
  const double achieved = bandwidth ? bytes_per_s : flops_per_s;
  const double pct = 100.0 * achieved / r.peak.value;
  if (pct <= 100.0) {
    r.roofline_pct = pct;
    return;
  }
  const char* unit = bandwidth ? "GB/s" : "GFLOP/s";
  r.roofline_note = fmt::format("measured {:.4g} {} is above the {:.4g} {} peak ({}), so no roofline figure: {}",
                                achieved / 1e9, unit, r.peak.value / 1e9, unit, r.peak.kind,
                                r.peak.caveat.empty() ? "the peak or the byte model does not hold for this case"
                                                      : r.peak.caveat);
}

}  // namespace gdn

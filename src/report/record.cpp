#include "report/record.h"

#include <cmath>

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
  const double median = r.timing.stats.median;
  if (!r.timed || !std::isfinite(median) || median <= 0) return;

  const double flops_per_s = r.work.flops / median;
  const double bytes_per_s = r.work.bytes / median;
  r.tflops = flops_per_s / 1e12;
  r.tflops_fi = r.work.flops_fi / median / 1e12;
  r.tbps = bytes_per_s / 1e12;

  if (!std::isfinite(r.peak.value) || r.peak.value <= 0) return;
  if (r.peak.kind == "copy_bandwidth" || r.peak.kind == "host_bandwidth")
    r.roofline_pct = 100.0 * bytes_per_s / r.peak.value;
  else if (r.peak.kind == "bf16_mma")
    r.roofline_pct = 100.0 * flops_per_s / r.peak.value;
}

}  // namespace gdn

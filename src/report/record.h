// Results are records; tables, JSON, CSV and exports are views of them.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/op.h"
#include "core/shape.h"
#include "core/state_drift.h"
#include "core/variant_origin.h"
#include "stats/stats.h"
#include "timing/measure.h"

namespace gdn {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Verification of one output tensor against the fp64 reference (docs/method.md 4).
struct TensorCheck {
  std::string tensor;
  double rel_l2 = kNaN;
  double max_abs = kNaN;
  double tolerance = kNaN;
  int64_t checked = 0;          // elements compared
  int64_t nonfinite = 0;        // NaN/Inf in the variant's output (poison excluded)
  int64_t unwritten = 0;        // still poisoned
  int64_t untouched_diff = 0;   // pool elements of untouched slots that changed (must be 0)
  bool pass = false;
};

struct Verification {
  bool ran = false;
  bool pass = false;
  std::string scope;  // "full" or what was sampled: "heads 0,9,18,31 of all 4 sequences"
  std::vector<TensorCheck> checks;
  double seconds = 0;  // wall time of the check (reference included)
};

// The measured peak a roofline percentage refers to.
struct Peak {
  std::string kind;  // "copy_bandwidth" (bytes/s) or "bf16_mma" (FLOP/s) or "host_bandwidth"
  double value = kNaN;
  std::string source;  // "calibrate cache", "measured now", ...
  // What could put a case above this peak, said in the case's roofline_note when one is (not
  // written to reports; the note is).
  std::string caveat;
};

enum class CaseStatus { ok, skipped, verify_failed, error };
std::string_view to_string(CaseStatus);

struct CaseRecord {
  // Identity.
  std::string case_name;
  std::string variant;  // "<op>/<variant>"
  std::string plan;     // the variant's launch plan for this shape (Variant::plan), "" when it has none
  Shape shape;
  std::string mode;     // cold | hot | graph
  std::string device;   // device (or host CPU) name
  uint64_t seed = 0;
  std::optional<double> threshold_pct;  // compare override from the config
  VariantOrigin origin;  // the variant's plugin file and its hash; empty for a built-in variant
  std::string repro;  // the command that re-runs this point alone (config/repro.h); "" when unknown

  CaseStatus status = CaseStatus::ok;
  std::string reason;  // skip reason or error message

  Verification verify;
  StateDrift drift;  // 8-bit pools, with verification: the quantized recurrence vs the fp32 one

  // Timing (absent when skipped, not timed or failed).
  bool timed = false;
  std::string timer;  // host | cupti | events
  Measurement timing;

  // Metrics from the op's work model (docs/method.md 5), over the median time.
  WorkModel work;
  double tflops = kNaN;      // work.flops / median
  double tflops_fi = kNaN;   // work.flops_fi / median
  double tbps = kNaN;        // work.bytes / median, TB/s (1e12)
  double roofline_pct = kNaN;   // never above 100: such a figure is withheld (NaN) and explained
  std::string roofline_note;    // why roofline_pct is withheld; "" when it is shown or simply unknown
  Peak peak;
  bool throttled = false;
  double wall_s = 0;  // whole case, verification included

  std::string op() const { return std::string(to_string(shape.op)); }
  std::string shape_key() const { return shape.key(); }
};

// Fills tflops/tbps/roofline from work, timing and the peak. A roofline above 100 % is a number
// the peak or the byte model got wrong: it is left NaN and roofline_note says why (docs/method.md 5).
void compute_metrics(CaseRecord& r);

}  // namespace gdn

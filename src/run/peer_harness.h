// One peer harness (scripts/peers/<peer>_peer.py, or kernel_peer.py --kernel module:function)
// run by gdnbench over a plan: its import checked first, then the harness run on the plan's
// points, then its report read back. Always one record or more per point: a harness that cannot
// import its peer (or a missing interpreter) gives a `skipped` record per point with the reason,
// one that dies gives an `error` record per point it did not reach, with its last stderr lines.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/record.h"

namespace gdn {

struct PeerHarness {
  std::string label;                    // what messages call it: "fla", "kernel mymod:gdn"
  std::string script;                   // the harness file
  std::vector<std::string> extra_args;  // after the common ones: {"--kernel", "mymod:gdn"}
  std::string fallback_variant;         // the variant of the records gdnbench writes for it
  // A kernel under test (--kernel) sets the exit code as ours do (2 failed verification, 4 an
  // error); a peer's records never do.
  bool judged = false;
};

struct HarnessRunOptions {
  std::string python = "python3";  // --python
  std::string work_dir;            // where the plan and the harness's report are written
  // A report the harness left in work_dir (a run killed while it ran) is resumed: the harness
  // keeps its finished records and runs the rest. Otherwise such a report is removed first.
  bool resume = false;
  int device = 0;
  bool verify = true;
};

// The harness's records over `plan` (run/plan_json.h), statistics and metrics recomputed by
// gdnbench from the samples each record carries (one stats engine), the work model gdnbench's.
std::vector<CaseRecord> run_peer_harness(const PeerHarness& h, const nlohmann::json& plan, const HarnessRunOptions& opt);

// Why the harness cannot run here ("" when its --check-import passes): a missing interpreter, or
// the last line of what its import check printed.
std::string harness_import_problem(const PeerHarness& h, const std::string& python);

// A plan point's record that gdnbench writes itself (status and reason set by the caller).
CaseRecord record_for_point(const nlohmann::json& point, const std::string& variant, const std::string& mode);

// Points of `plan` and their records are matched by case, shape key and seed.
std::string point_identity(const std::string& case_name, const std::string& shape_key, uint64_t seed);

}  // namespace gdn

// Records a peer harness gave `run --peers` / `--kernel` (scripts/peers) carry this origin kind,
// with the harness as the path: in the one report, they are the peers beside ours.
#pragma once

#include "report/record.h"

namespace gdn {

inline constexpr const char* kHarnessOrigin = "harness";

inline bool from_harness(const CaseRecord& r) { return r.origin.kind == kHarnessOrigin; }

}  // namespace gdn

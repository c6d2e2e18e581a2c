// The plan JSON (`gdnbench plan --json`, and what `run --peers` hands each peer harness): a
// sweep's points with everything gdnbench computes for them (the work model, the tolerances, the
// input distribution) and the stopping rule and mode, so a harness reads the contract instead of
// keeping a copy of it (docs/report-schema.md, "Plan JSON").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "config/config.h"
#include "core/types.h"
#include "run/shard.h"
#include "timing/measure.h"

namespace gdn {

struct PlanJsonOptions {
  std::optional<OpKind> op;       // --op: only this op's points
  std::optional<uint64_t> seed;   // --seed: overrides every case's seed, as the runner does
  Shard shard;                    // --shard: only the points whose index % count == index
  std::string mode = "cold";      // the timing mode a harness uses
  StoppingRule rule;              // the GPU stopping rule a harness applies
};

nlohmann::json plan_json(const SweepConfig& cfg, const PlanJsonOptions& opt);

}  // namespace gdn

// The numbers of the docs/method.md 3 input distributions, as src/run/inputs.cpp draws them, and
// their description for the plan JSON (`gdnbench plan --json`), from which the peer harnesses
// draw the same distributions: one place for each number.
#pragma once

#include <nlohmann/json.hpp>

#include "core/shape.h"

namespace gdn::input_numbers {

inline constexpr double kLogGateDivisor = 16.0;      // standard g = logsigmoid(x) / 16
inline constexpr double kStrongDecayRateMax = 16.0;  // strong_decay: A_h ~ U[0, 16], head 0 never decays
inline constexpr double kStrongSoftplusScale = 0.5;  // strong_decay g = -A_h softplus(0.5 x + 1)
inline constexpr double kStrongSoftplusShift = 1.0;
inline constexpr double kALogLow = 1.0 / 16.0;       // standard A_log = log(U[1/16, 1])
inline constexpr double kDtBiasScale = 0.5;          // dt_bias = 0.5 x - 2
inline constexpr double kDtBiasShift = -2.0;
inline constexpr double kBetaOneRawB = 100.0;        // beta_one raw b: sigmoid(100) == 1 in fp32
inline constexpr double kRowNormLow = 0.5;           // q, k rows without l2norm: norm ~ U[1/2, 1]
inline constexpr double kPositiveKeysScale = 1.0 - 0x1.0p-8;  // positive_keys: U[0, 1) times this
inline constexpr int kPaddingEvery = 8;              // padded indices: row i % 8 == 7 is -1

// First value head of the no-decay quarter: ceil(0.75 HV).
constexpr int first_still_head(int hv) { return (3 * hv + 3) / 4; }

}  // namespace gdn::input_numbers

namespace gdn {

// The `inputs` block of a plan point: the distribution kind and the numbers of each tensor's draw
// for this shape (docs/report-schema.md, "Plan JSON").
nlohmann::json input_distribution_json(const Shape& s);

}  // namespace gdn

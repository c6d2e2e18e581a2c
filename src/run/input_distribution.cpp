#include "run/input_distribution.h"

#include <string>

namespace gdn {

nlohmann::json input_distribution_json(const Shape& s) {
  using namespace input_numbers;
  using nlohmann::json;
  const InputDist d = s.inputs;
  json qk = {{"draw", d == InputDist::positive_keys ? "uniform" : "normal"}, {"uniform_scale", kPositiveKeysScale}};
  qk["row_norm"] = s.l2norm ? json(nullptr) : json::array({kRowNormLow, 1.0});
  const json strong = {{"form", "strong_decay"},
                       {"rate_max", kStrongDecayRateMax},
                       {"softplus_scale", kStrongSoftplusScale},
                       {"softplus_shift", kStrongSoftplusShift}};
  json g = d == InputDist::no_decay       ? json{{"form", "zero"}}
           : d == InputDist::strong_decay ? strong
                                          : json{{"form", "logsigmoid"}, {"divisor", kLogGateDivisor}};
  json a_log = d == InputDist::no_decay       ? json{{"form", "minus_inf"}}
               : d == InputDist::strong_decay ? json{{"form", "log_rate"}, {"rate_max", kStrongDecayRateMax}}
                                              : json{{"form", "log_uniform"}, {"low", kALogLow}, {"high", 1.0}};
  const bool beta_one = d == InputDist::beta_one;
  return {{"kind", std::string(to_string(d))},
          {"still_heads_from", first_still_head(s.h_v)},
          {"qk", qk},
          {"g", g},
          {"beta", {{"form", beta_one ? "one" : "sigmoid"}}},
          {"a_log", a_log},
          {"dt_bias", {{"scale", kDtBiasScale}, {"shift", kDtBiasShift}}},
          {"b", beta_one ? json{{"form", "constant"}, {"value", kBetaOneRawB}} : json{{"form", "normal"}}},
          {"padding_every", kPaddingEvery}};
}

}  // namespace gdn

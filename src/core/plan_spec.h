// Plan specs, the values of the `plan` axis (docs/plans.md): "knob=value,knob=value" over the
// knobs a variant declares (Variant::knobs). The text is normalised once, when the config loads,
// so the shape key and the report carry one spelling; a family's check_plan and its planner read
// the settings back with parse_plan_spec. Header-only: the kernel families include it too.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/registry.h"

namespace gdn {

struct PlanSetting {
  std::string knob, value;
};

namespace plan_spec_detail {
inline std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}
inline bool allowed_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}
}  // namespace plan_spec_detail

// The settings of a spec in the order written; "" and "default" are the default plan (no
// settings). Throws std::invalid_argument saying what is wrong: a pair without '=', an empty knob
// or value, a character other than letters, digits, '_', '-', '.', or a knob set twice.
inline std::vector<PlanSetting> parse_plan_spec(std::string_view spec) {
  using plan_spec_detail::trim;
  std::vector<PlanSetting> out;
  spec = trim(spec);
  if (spec.empty() || spec == "default") return out;
  std::size_t start = 0;
  while (start <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string_view pair = trim(spec.substr(start, comma - start));
    start = comma + 1;
    const std::size_t eq = pair.find('=');
    if (pair.empty()) throw std::invalid_argument("an empty knob=value pair (a stray ',')");
    if (eq == std::string_view::npos) throw std::invalid_argument(fmt::format("'{}' is not knob=value", pair));
    PlanSetting s{std::string(trim(pair.substr(0, eq))), std::string(trim(pair.substr(eq + 1)))};
    if (s.knob.empty() || s.value.empty()) throw std::invalid_argument(fmt::format("'{}' is not knob=value", pair));
    for (const std::string* part : {&s.knob, &s.value})
      if (!std::all_of(part->begin(), part->end(), plan_spec_detail::allowed_char))
        throw std::invalid_argument(
            fmt::format("'{}' in '{}': knobs and values are letters, digits, '_', '-' and '.'", *part, pair));
    for (const auto& seen : out)
      if (seen.knob == s.knob) throw std::invalid_argument(fmt::format("knob '{}' is set twice", s.knob));
    out.push_back(std::move(s));
  }
  return out;
}

// The one spelling of a spec: "" for the default plan, else "knob=value,..." without spaces, in
// the order written. Throws like parse_plan_spec.
inline std::string normalize_plan_spec(std::string_view spec) {
  std::string out;
  for (const auto& s : parse_plan_spec(spec)) out += fmt::format("{}{}={}", out.empty() ? "" : ",", s.knob, s.value);
  return out;
}

// A value a knob takes: one of its values, where "<n>" stands for any positive integer.
inline bool knob_takes(const PlanKnob& k, const std::string& value) {
  for (const auto& v : k.values) {
    if (v == value) return true;
    if (v == "<n>" && !value.empty() && value.size() <= 9 && value.find_first_not_of("0123456789") == std::string::npos &&
        std::stol(value) > 0)
      return true;
  }
  return false;
}

// "" when every setting of spec names a knob of the table with a value it takes, else why not
// (naming the knobs, or the knob's values). The check_plan of a family without rules between
// its knobs is this alone.
inline std::string check_plan_knobs(const std::vector<PlanKnob>& knobs, std::string_view spec) {
  std::vector<PlanSetting> settings;
  try {
    settings = parse_plan_spec(spec);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  for (const auto& s : settings) {
    auto k = std::find_if(knobs.begin(), knobs.end(), [&](const PlanKnob& x) { return x.name == s.knob; });
    if (k == knobs.end()) {
      std::vector<std::string> names;
      for (const auto& x : knobs) names.push_back(x.name);
      return fmt::format("unknown knob '{}' (knobs: {})", s.knob, fmt::join(names, ", "));
    }
    if (!knob_takes(*k, s.value))
      return fmt::format("knob {} takes {}, not '{}'", k->name, fmt::join(k->values, ", "), s.value);
  }
  return "";
}

}  // namespace gdn

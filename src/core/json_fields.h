// Reading one field of a JSON object into a typed value, the way every reader of our JSON files
// does it: a missing key keeps the field's default, null keeps it too (doubles: null reads back as
// NaN, since it was written for NaN/Inf), enums by name.
#pragma once

#include <nlohmann/json.hpp>

#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "core/errors.h"

namespace gdn {

inline void read(const nlohmann::json& j, const char* key, double& out) {
  auto it = j.find(key);
  if (it == j.end()) return;
  out = it->is_null() ? std::numeric_limits<double>::quiet_NaN() : it->get<double>();
}
template <class T> void read(const nlohmann::json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) it->get_to(out);
}

template <class E>
void read_enum(const nlohmann::json& j, const char* key, E& out, std::optional<E> (*parse)(std::string_view)) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  const auto text = it->get<std::string>();
  auto v = parse(text);
  if (!v) throw input_error("unknown value '" + text + "' for '" + key + "'");
  out = *v;
}

}  // namespace gdn

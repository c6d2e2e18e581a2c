// Reading one field of a JSON object into a typed value, the way every reader of our JSON files
// does it: a missing key keeps the field's default, null keeps it too (doubles: null reads back as
// NaN, since it was written for NaN/Inf), enums by name.
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/errors.h"

namespace gdn {

inline void read(const nlohmann::json& j, const char* key, double& out) {
  auto it = j.find(key);
  if (it == j.end()) return;
  out = it->is_null() ? std::numeric_limits<double>::quiet_NaN() : it->get<double>();
}
// Integers are range-checked here, not by the library: nlohmann converts 2.5e71 or -1 into an
// unsigned field by a plain cast, which is undefined behaviour. A float is taken only when it
// is a whole number in range (8.0 reads as 8).
template <class T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
void read(const nlohmann::json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  using Lim = std::numeric_limits<T>;
  const auto refuse = [&] {
    return input_error(std::string("'") + key + "' must be an integer in [" + std::to_string(Lim::min()) + ", " +
                       std::to_string(Lim::max()) + "], not " + it->dump());
  };
  if (it->is_number_unsigned()) {
    const auto v = it->get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(Lim::max())) throw refuse();
    out = static_cast<T>(v);
  } else if (it->is_number_integer()) {
    const auto v = it->get<std::int64_t>();
    if constexpr (std::is_unsigned_v<T>) {
      if (v < 0 || static_cast<std::uint64_t>(v) > static_cast<std::uint64_t>(Lim::max())) throw refuse();
    } else if (v < static_cast<std::int64_t>(Lim::min()) || v > static_cast<std::int64_t>(Lim::max())) {
      throw refuse();
    }
    out = static_cast<T>(v);
  } else if (it->is_number_float()) {
    // 2^63 and 2^64 are exact doubles; the half-open bounds keep every accepted value castable.
    const double v = it->get<double>();
    const double hi = std::ldexp(1.0, Lim::digits);
    const double lo = std::is_signed_v<T> ? -hi : 0.0;
    if (!(v >= lo && v < hi) || v != std::floor(v)) throw refuse();
    out = static_cast<T>(v);
  } else {
    throw refuse();
  }
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

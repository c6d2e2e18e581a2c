// Every axis of a Shape, declared once: its config key, the ops it applies to, its value type,
// its names in the report's shape object, its part of the shape key, and the code that writes
// and reads it. The config loader (key order, ops), Shape::key, the JSON reader and writer and
// the plan file that peer harnesses read all walk this table.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "core/shape.h"

namespace gdn {

// Ops as a bit set.
enum OpBits : unsigned { kBitPrefill = 1u, kBitDecode = 2u, kBitMtp = 4u, kBitSteps = 6u, kBitAll = 7u };
constexpr unsigned op_bit(OpKind op) {
  return op == OpKind::prefill ? kBitPrefill : op == OpKind::decode ? kBitDecode : kBitMtp;
}

struct AxisDef {
  std::string_view key;                 // config key
  unsigned ops;                         // ops that read it
  std::string_view type;                // value type in the config, as docs/config.md's table says it
  std::vector<std::string_view> json;   // fields of the shape object it is stored in
  // Writes its fields into a shape object and reads them back (a missing field keeps the default).
  void (*write)(const Shape&, nlohmann::json&);
  void (*read)(const nlohmann::json&, Shape&);
  // Its part of Shape::key() (with a leading space; "" when it prints nothing for this shape) and
  // the position of that part in the key (parts print in increasing key_rank).
  int key_rank;
  std::string (*key_part)(const Shape&);
};

// In config expansion order: the first axis varies slowest.
const std::vector<AxisDef>& shape_axes();
const AxisDef* find_axis(std::string_view key);

// The shape object of a report (every field of every axis, and "op").
nlohmann::json shape_to_json(const Shape& s);
Shape shape_from_json_object(const nlohmann::json& j);  // throws input_error on a non-object

// The table as data, for the plan file: key, ops, type, JSON fields and the default shape object
// of every op (peer harnesses read their defaults from it).
nlohmann::json axes_to_json();

}  // namespace gdn

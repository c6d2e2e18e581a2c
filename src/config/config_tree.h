// The one tree that YAML and JSON configs are both read into, so the schema is checked by a
// single code path. Every node keeps the 1-based source line it was written on.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gdn {

struct ConfigMember;

struct ConfigNode {
  enum class Kind { null, scalar, list, map };
  Kind kind = Kind::null;
  int line = 1;
  std::string text;     // scalar as written (quotes removed)
  bool quoted = false;  // a quoted scalar is always a string, never a number or a bool
  std::vector<ConfigNode> items;      // list elements
  std::vector<ConfigMember> members;  // map entries in file order (duplicates kept; the schema rejects them)

  bool is_scalar() const { return kind == Kind::scalar; }
  bool is_list() const { return kind == Kind::list; }
  bool is_map() const { return kind == Kind::map; }
  // Short rendering for "(got ...)": scalars as written, lists and maps in flow style, trimmed.
  std::string describe() const;
};

struct ConfigMember {
  std::string key;
  int key_line = 1;
  ConfigNode value;
};

// What an unquoted scalar means, by the YAML 1.2 core schema (JSON literals read the same way):
// null (~, null, empty), boolean (true/false), integer ([-+]digits), real (decimal or exponent),
// anything else is a string.
enum class ScalarType { null, boolean, integer, real, string };
ScalarType scalar_type(const ConfigNode& n);

// Parses config text into a tree. `name` (the file name) picks the format: .yaml/.yml YAML,
// .json JSON, anything else JSON when the first non-space character is '{', else YAML.
// Syntax errors, YAML anchors/aliases and crossed limits (config_limits.h) throw input_error
// "NAME:LINE: ..." as soon as they are read.
ConfigNode parse_config_tree(const std::string& text, const std::string& name);
ConfigNode parse_yaml_tree(const std::string& text, const std::string& name);   // yaml_tree.cpp
ConfigNode parse_json_tree(const std::string& text, const std::string& name);   // json_tree.cpp

// The bytes of a config file, reading no more than one byte past the size limit; input_error
// when it cannot be read or is too large.
std::string read_config_file(const std::string& path);

}  // namespace gdn

// Sweep configs: YAML or JSON with one schema (docs/config.md). Loading validates
// everything before anything runs; every problem is an input_error (exit 3) whose message
// names the file, the key path and the value.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/shape.h"

namespace gdn {

struct CaseSpec {
  std::string name;          // from the config, or "<op>#<index>"
  OpKind op = OpKind::prefill;
  std::string variant_glob = "*";
  std::vector<Shape> shapes;  // cartesian product of the case's axes, in the axis order of case_keys()
  uint64_t seed = 0;
  std::optional<double> threshold_pct;  // compare threshold override for this case
  std::optional<int> verify_heads;      // sample this many value heads when verifying (0 = all)
};

struct SweepConfig {
  std::string path;
  std::string hash;  // FNV-1a 64 of the file bytes, hex
  std::vector<CaseSpec> cases;
  std::size_t total_points() const;
};

// Parses and validates a config file (.yaml/.yml/.json; anything else is sniffed).
SweepConfig load_config(const std::string& path);
// Same, from text (name is used in messages).
SweepConfig parse_config(const std::string& text, const std::string& name);

struct ConfigNode;
// Names a place of a tree that no file holds: the prefix of a message about `line` at key path
// `path` ("-a batch=1,x: batch[1]: "), in place of "FILE:LINE: PATH: ".
using ConfigLocator = std::function<std::string(int line, const std::string& path)>;
// Validates and expands a tree built in memory (the command line's -a flags) by the same rules as
// a file; `name` and `hash` identify the sweep in reports.
SweepConfig build_config_tree(const ConfigNode& root, const std::string& name, const std::string& hash,
                              ConfigLocator locate);

// Keys accepted in a case (and in `defaults`), for messages and docs/config.md.
const std::vector<std::string>& case_keys();

}  // namespace gdn

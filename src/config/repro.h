// The repro line of a record: the command that re-runs that one point alone, with every axis
// that differs from the op's default shape as an -a flag (config/adhoc_axes.h reads them back),
// the exact variant and the point's own seed (a one-point sweep's seed is its point's).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/shape.h"

namespace gdn {

// The -a values that rebuild `s` from its op's default shape ("batch=8", "heads=16/32", ...);
// empty optional when a flag cannot say it (head dims K != V, which no config writes either).
std::optional<std::vector<std::string>> adhoc_axes_of(const Shape& s);

struct ReproPoint {
  std::string program;  // argv[0] as invoked
  std::string command;  // run | verify
  std::string variant;
  Shape shape;
  uint64_t seed = 0;
  std::string mode;                 // run: cold | hot | graph (cold is left out)
  std::optional<int> verify_heads;  // the case's verify_heads, when set
};

// "PROGRAM run --op OP -a ... --variant V --seed N [--mode M]", each word shell-quoted where it
// needs it; "" when the shape cannot be said in flags.
std::string repro_line(const ReproPoint& p);

// `word` as one shell word: as is when it holds only safe characters, else in single quotes.
std::string shell_quote(const std::string& word);

}  // namespace gdn

// Hard limits on what a config may hold, so that no file (a YAML alias bomb, a deep nest, a
// multi-gigabyte download) can make the reader take unbounded memory or time. Both readers count
// against the same budget while they build the tree, and stop at the first limit crossed with
// "FILE:LINE: ...". docs/config.md "Limits" documents the numbers.
#pragma once

#include <cstddef>
#include <fmt/format.h>
#include <string>

#include "core/errors.h"

namespace gdn {

constexpr std::size_t kMaxConfigBytes = std::size_t(1) << 20;  // the shipped configs are ~1.5 KB
constexpr std::size_t kMaxConfigNodes = 100'000;               // keys, values, lists and maps
constexpr std::size_t kMaxConfigDepth = 64;                    // nested lists and maps
constexpr std::size_t kMaxScalarBytes = std::size_t(64) << 10;  // one key or value

// Counts what a reader builds and throws input_error (exit 3) at the first limit crossed.
class TreeBudget {
 public:
  explicit TreeBudget(std::string name) : name_(std::move(name)) {}

  // One more node at `depth` (the root is depth 0, so kMaxConfigDepth levels end at depth - 1).
  void add_node(int line, std::size_t depth) {
    if (++nodes_ > kMaxConfigNodes)
      fail(line, fmt::format("more than {} keys, values, lists and maps (the limit for a config)", kMaxConfigNodes));
    if (depth >= kMaxConfigDepth) fail(line, fmt::format("nesting deeper than {} levels", kMaxConfigDepth));
  }
  void check_scalar(int line, std::size_t bytes) const {
    if (bytes > kMaxScalarBytes)
      fail(line, fmt::format("a value of {} bytes, more than the {} KiB limit", bytes, kMaxScalarBytes >> 10));
  }
  [[noreturn]] void fail(int line, const std::string& problem) const {
    throw input_error(fmt::format("{}:{}: {}", name_, line, problem));
  }

 private:
  std::string name_;
  std::size_t nodes_ = 0;
};

}  // namespace gdn

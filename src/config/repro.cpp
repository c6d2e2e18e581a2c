#include "config/repro.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>

#include "core/axes.h"
#include "core/checkpoints.h"
#include "core/op.h"

namespace gdn {
namespace {

std::string flag(bool v) { return v ? "true" : "false"; }

// "4096x8" when every length is the same and the set reads back so ("NxL" takes the smaller
// factor as the count), else the explicit lengths joined by '+'.
std::string seqlens_value(const std::vector<int64_t>& lens) {
  if (lens.empty()) return "";
  const bool equal = std::all_of(lens.begin(), lens.end(), [&](int64_t l) { return l == lens.front(); });
  if (equal && lens.front() >= int64_t(lens.size())) return fmt::format("{}x{}", lens.front(), lens.size());
  return fmt::format("{}", fmt::join(lens, "+"));
}

// An axis's value as -a writes it; "" when the shape leaves it unset (pool 0, the default plan).
using ValueOf = std::function<std::string(const Shape&)>;

const std::map<std::string_view, ValueOf>& value_writers() {
  static const std::map<std::string_view, ValueOf> writers{
      {"inputs", [](const Shape& s) { return std::string(to_string(s.inputs)); }},
      {"input_dtype", [](const Shape& s) { return std::string(to_string(s.input_dtype)); }},
      {"gate", [](const Shape& s) { return std::string(to_string(s.gate)); }},
      {"l2norm", [](const Shape& s) { return flag(s.l2norm); }},
      {"scale", [](const Shape& s) { return fmt::format("{}", s.scale); }},
      {"state_dtype", [](const Shape& s) { return std::string(to_string(s.state_dtype)); }},
      {"layout", [](const Shape& s) { return std::string(to_string(s.layout)); }},
      {"indices", [](const Shape& s) { return std::string(to_string(s.indices)); }},
      {"index_dtype", [](const Shape& s) { return std::string(to_string(s.index_dtype)); }},
      {"cache_intermediate", [](const Shape& s) { return flag(s.cache_intermediate); }},
      {"update_state", [](const Shape& s) { return flag(s.update_state); }},
      {"rollback", [](const Shape& s) { return flag(s.rollback); }},
      {"h0", [](const Shape& s) { return flag(s.has_h0); }},
      {"heads", [](const Shape& s) { return fmt::format("{}/{}", s.h_qk, s.h_v); }},
      {"head_dim", [](const Shape& s) { return std::to_string(s.dk); }},
      {"pool", [](const Shape& s) { return s.pool > 0 ? std::to_string(s.pool) : std::string(); }},
      {"seqlens", [](const Shape& s) { return seqlens_value(s.seqlens); }},
      {"checkpoints",
       [](const Shape& s) {
         return s.checkpoint_every > 0 ? std::to_string(s.checkpoint_every)
                                       : s.checkpoint_at.empty() ? std::string() : checkpoint_at_text(s.checkpoint_at);
       }},
      {"tokens", [](const Shape& s) { return std::to_string(s.tokens); }},
      {"batch", [](const Shape& s) { return std::to_string(s.batch); }},
      {"plan", [](const Shape& s) { return s.plan; }},
  };
  return writers;
}

bool safe_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("_-./=+,:@%").find(c) != std::string_view::npos;
}

}  // namespace

std::optional<std::vector<std::string>> adhoc_axes_of(const Shape& s) {
  if (s.dk != s.dv) return std::nullopt;
  const Shape base = op_def(s.op).default_shape();
  std::vector<std::string> out;
  for (const AxisDef& a : shape_axes()) {
    if (!(a.ops & op_bit(s.op))) continue;
    const auto& write = value_writers().at(a.key);
    const std::string value = write(s);
    // The op's required axes always; any other only where it differs from the default.
    const bool required = (s.op == OpKind::prefill && a.key == "seqlens") || (s.op == OpKind::mtp && a.key == "tokens");
    if (value.empty() || (!required && value == write(base))) continue;
    out.push_back(fmt::format("{}={}", a.key, value));
  }
  return out;
}

std::string shell_quote(const std::string& word) {
  if (!word.empty() && std::all_of(word.begin(), word.end(), safe_char)) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string repro_line(const ReproPoint& p) {
  const auto axes = adhoc_axes_of(p.shape);
  if (!axes) return "";
  std::vector<std::string> words{p.program.empty() ? std::string("gdnbench") : p.program, p.command, "--op",
                                 std::string(to_string(p.shape.op))};
  for (const auto& a : *axes) words.insert(words.end(), {"-a", a});
  if (p.verify_heads) words.insert(words.end(), {"-a", fmt::format("verify_heads={}", *p.verify_heads)});
  words.insert(words.end(), {"--variant", p.variant, "--seed", std::to_string(p.seed)});
  if (p.command == "run" && !p.mode.empty() && p.mode != "cold") words.insert(words.end(), {"--mode", p.mode});
  std::string line;
  for (const auto& w : words) line += (line.empty() ? "" : " ") + shell_quote(w);
  return line;
}

}  // namespace gdn

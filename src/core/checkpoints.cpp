#include "core/checkpoints.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace gdn {

std::vector<int64_t> checkpoint_positions(const Shape& s, int64_t n) {
  std::vector<int64_t> out;
  if (n < 0 || n >= int64_t(s.seqlens.size())) return out;
  if (s.checkpoint_every > 0) {
    for (int64_t p = s.checkpoint_every; p <= s.seqlens[size_t(n)]; p += s.checkpoint_every) out.push_back(p);
  } else if (size_t(n) < s.checkpoint_at.size()) {
    out = s.checkpoint_at[size_t(n)];
  }
  return out;
}

int64_t checkpoint_columns(const Shape& s) {
  int64_t most = 0;
  for (int64_t n = 0; n < int64_t(s.seqlens.size()); ++n) most = std::max(most, int64_t(checkpoint_positions(s, n).size()));
  return most;
}

int64_t checkpoints_written(const Shape& s) {
  const int64_t J = checkpoint_columns(s);
  int64_t count = 0;
  for (int64_t n = 0; n < int64_t(s.seqlens.size()); ++n) {
    const int64_t here = int64_t(checkpoint_positions(s, n).size());
    for (int64_t j = 0; j < here; ++j)
      count += checkpoint_skipped(s, n * J + j) ? 0 : 1;
  }
  return count;
}

std::string validate_checkpoints(const Shape& s) {
  if (s.checkpoint_every < 0) return fmt::format("checkpoints: every C tokens needs C >= 0 (got {})", s.checkpoint_every);
  if (!s.has_checkpoints()) return "";
  if (s.op != OpKind::prefill) return "checkpoints apply to prefill only";
  if (s.checkpoint_every > 0 && !s.checkpoint_at.empty())
    return "checkpoints are every C tokens or an explicit list, not both";
  if (s.checkpoint_every % kCheckpointGranule != 0)
    return fmt::format("checkpoints: every C tokens needs C to be a multiple of {} (got {})", kCheckpointGranule,
                       s.checkpoint_every);
  if (!s.checkpoint_at.empty()) {
    if (s.checkpoint_at.size() != s.seqlens.size())
      return fmt::format("checkpoints: {} position lists for {} sequences (one list per sequence, or one for all)",
                         s.checkpoint_at.size(), s.seqlens.size());
    for (size_t n = 0; n < s.seqlens.size(); ++n) {
      int64_t last = 0;
      for (int64_t p : s.checkpoint_at[n]) {
        if (p <= last || p % kCheckpointGranule != 0 || p > s.seqlens[n])
          return fmt::format(
              "checkpoints: position {} of sequence {} (length {}) must be a multiple of {} in 1..length, "
              "increasing",
              p, n, s.seqlens[n], kCheckpointGranule);
        last = p;
      }
    }
  }
  if (!s.prefill_pool()) return "checkpoints are written to pool slots: they need the pool form (set pool)";
  int64_t needed = int64_t(s.seqlens.size());
  for (int64_t n = 0; n < int64_t(s.seqlens.size()); ++n) needed += int64_t(checkpoint_positions(s, n).size());
  if (s.pool_slots() < needed)
    return fmt::format("pool of {} slots is too small for {} sequences and {} checkpoints (needs {} slots)", s.pool_slots(),
                       s.seqlens.size(), needed - int64_t(s.seqlens.size()), needed);
  return "";
}

std::string checkpoint_at_text(const std::vector<std::vector<int64_t>>& table) {
  std::string out = "at:";
  for (size_t n = 0; n < table.size(); ++n) {
    if (n > 0) out += '/';
    out += fmt::format("{}", fmt::join(table[n], "+"));
  }
  return out;
}

namespace {
// Splits text at every sep ("" gives one empty part).
std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts(1);
  for (char c : text) {
    if (c == sep) parts.emplace_back();
    else parts.back().push_back(c);
  }
  return parts;
}
}  // namespace

std::vector<std::vector<int64_t>> parse_checkpoint_at(const std::string& text) {
  if (text.rfind("at:", 0) != 0)
    throw std::invalid_argument(fmt::format("'{}' is not an explicit checkpoint list (\"at:P+P/P\")", text));
  std::vector<std::vector<int64_t>> groups;
  bool any = false;
  for (const std::string& group : split(text.substr(3), '/')) {
    groups.emplace_back();
    if (group.empty()) continue;  // a sequence without checkpoints
    for (const std::string& number : split(group, '+')) {
      if (number.empty() || number.size() > 12 || number.find_first_not_of("0123456789") != std::string::npos)
        throw std::invalid_argument(
            fmt::format("'{}' in checkpoint list '{}' is not a position (digits; '+' between positions, '/' "
                        "between sequences)",
                        number, text));
      groups.back().push_back(std::stoll(number));
      any = true;
    }
  }
  if (!any) throw std::invalid_argument(fmt::format("checkpoint list '{}' names no position", text));
  return groups;
}

std::vector<std::vector<int64_t>> spread_checkpoint_at(const std::vector<std::vector<int64_t>>& groups,
                                                       const std::vector<int64_t>& seqlens) {
  if (groups.size() != 1) return groups;
  std::vector<std::vector<int64_t>> out;
  for (int64_t len : seqlens) {
    out.emplace_back();
    for (int64_t p : groups[0])
      if (p <= len) out.back().push_back(p);
  }
  return out;
}

}  // namespace gdn

#include "core/shape.h"

#include <cmath>
#include <fmt/format.h>
#include <numeric>
#include <stdexcept>

namespace gdn {

double Shape::effective_scale() const { return scale > 0.0 ? scale : 1.0 / std::sqrt(double(dk)); }

int64_t Shape::total_tokens() const {
  if (op == OpKind::prefill) return std::accumulate(seqlens.begin(), seqlens.end(), int64_t{0});
  return batch * (op == OpKind::mtp ? tokens : 1);
}

std::string Shape::seqlens_label() const {
  if (seqlens.empty()) return "-";
  bool all_equal = true;
  for (auto l : seqlens) all_equal = all_equal && l == seqlens.front();
  if (all_equal) {
    if (seqlens.size() == 1) return fmt::format("1x{}", seqlens.front());
    // Length first, count second, as FlashQLA writes it ("8192x4").
    if (seqlens.front() > int64_t(seqlens.size())) return fmt::format("{}x{}", seqlens.front(), seqlens.size());
  }
  if (seqlens.size() <= 8) return fmt::format("{}", fmt::join(seqlens, "+"));
  return fmt::format("{}seqs/{}tok", seqlens.size(), total_tokens());
}

// Shape::key() is built from the axis table: src/core/axes.cpp.

namespace {
// A number of a sequence set, at least `least` (counts and "NxL" lengths 1; a '+' entry 0: an
// empty sequence, a repeated cu_seqlens entry).
int64_t parse_count(const std::string& part, const std::string& whole, int64_t least) {
  if (part.empty()) throw std::invalid_argument(fmt::format("empty number in sequence set '{}'", whole));
  for (char c : part)
    if (c < '0' || c > '9')
      throw std::invalid_argument(fmt::format("'{}' in sequence set '{}' is not a non-negative integer", part, whole));
  if (part.size() > 12) throw std::invalid_argument(fmt::format("'{}' in sequence set '{}' is too large", part, whole));
  int64_t v = std::stoll(part);
  if (v < least)
    throw std::invalid_argument(least == 1 ? fmt::format("'NxL' counts and lengths must be >= 1 (got {} in '{}')", v, whole)
                                           : fmt::format("sequence lengths must be >= 0 (got {} in '{}')", v, whole));
  return v;
}
}  // namespace

std::vector<int64_t> parse_seqlens(const std::string& text) {
  if (text.empty()) throw std::invalid_argument("empty sequence set");
  auto x = text.find('x');
  if (x != std::string::npos) {
    if (text.find('+') != std::string::npos)
      throw std::invalid_argument(fmt::format("sequence set '{}' mixes 'x' and '+'", text));
    int64_t a = parse_count(text.substr(0, x), text, 1);
    int64_t b = parse_count(text.substr(x + 1), text, 1);
    int64_t count = std::min(a, b), length = std::max(a, b);
    if (count > (int64_t(1) << 24))
      throw std::invalid_argument(fmt::format("sequence set '{}' has too many sequences", text));
    return std::vector<int64_t>(size_t(count), length);
  }
  std::vector<int64_t> out;
  size_t start = 0;
  while (true) {
    auto plus = text.find('+', start);
    out.push_back(parse_count(text.substr(start, plus - start), text, 0));
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  return out;
}

}  // namespace gdn

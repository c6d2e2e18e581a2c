#include "run/shard.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace gdn {
namespace {

constexpr std::size_t kMaxShards = 100000;

bool digits(const std::string& s) { return !s.empty() && s.size() <= 6 && s.find_first_not_of("0123456789") == std::string::npos; }

}  // namespace

Shard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  const std::string index = slash == std::string::npos ? "" : text.substr(0, slash);
  const std::string count = slash == std::string::npos ? "" : text.substr(slash + 1);
  if (!digits(index) || !digits(count))
    throw input_error(fmt::format("--shard {}: expected INDEX/COUNT such as 0/4 (whole numbers)", text));
  Shard s{std::stoul(index), std::stoul(count)};
  if (s.count < 1 || s.count > kMaxShards)
    throw input_error(fmt::format("--shard {}: COUNT must be 1 to {}", text, kMaxShards));
  if (s.index >= s.count)
    throw input_error(fmt::format("--shard {}: INDEX is 0-based, 0 to {}", text, s.count - 1));
  return s;
}

}  // namespace gdn

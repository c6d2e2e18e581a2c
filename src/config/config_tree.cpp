#include "config/config_tree.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "config/config_limits.h"
#include "core/bounded_file.h"
#include "core/errors.h"

namespace gdn {
namespace {

bool is_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string_view drop_sign(std::string_view s) {
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) s.remove_prefix(1);
  return s;
}

bool is_real(std::string_view s) {
  s = drop_sign(s);
  auto e = s.find_first_of("eE");
  std::string_view mant = s.substr(0, e);
  if (e != std::string_view::npos && !is_digits(drop_sign(s.substr(e + 1)))) return false;
  auto dot = mant.find('.');
  if (dot == std::string_view::npos) return is_digits(mant);
  std::string_view whole = mant.substr(0, dot), frac = mant.substr(dot + 1);
  return (whole.empty() || is_digits(whole)) && (frac.empty() || is_digits(frac)) && !(whole.empty() && frac.empty());
}

void describe_into(const ConfigNode& n, std::string& out, std::size_t limit) {
  if (out.size() > limit) return;
  switch (n.kind) {
    case ConfigNode::Kind::null: out += "null"; break;
    case ConfigNode::Kind::scalar: out += n.text.empty() ? std::string("\"\"") : n.text; break;
    case ConfigNode::Kind::list:
      out += '[';
      for (std::size_t i = 0; i < n.items.size() && out.size() <= limit; ++i) {
        if (i) out += ", ";
        describe_into(n.items[i], out, limit);
      }
      out += ']';
      break;
    case ConfigNode::Kind::map:
      out += '{';
      for (std::size_t i = 0; i < n.members.size() && out.size() <= limit; ++i) {
        if (i) out += ", ";
        out += n.members[i].key + ": ";
        describe_into(n.members[i].value, out, limit);
      }
      out += '}';
      break;
  }
}

// Names the line on which the size limit is crossed, so even this message has a FILE:LINE.
void check_config_size(const std::string& text, const std::string& name) {
  if (text.size() <= kMaxConfigBytes) return;
  const auto newlines = std::count(text.begin(), text.begin() + std::ptrdiff_t(kMaxConfigBytes), '\n');
  throw input_error(fmt::format("{}:{}: the config is larger than the {} MiB limit (the limit is crossed on this line)",
                                name, newlines + 1, kMaxConfigBytes >> 20));
}

std::string lower_extension(const std::string& name) {
  auto slash = name.find_last_of("/\\");
  auto dot = name.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = name.substr(dot + 1);
  for (auto& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

}  // namespace

std::string ConfigNode::describe() const {
  constexpr std::size_t kLimit = 80;
  std::string out;
  describe_into(*this, out, kLimit);
  if (out.size() > kLimit) out = out.substr(0, kLimit) + "...";
  return out;
}

ScalarType scalar_type(const ConfigNode& n) {
  if (n.kind == ConfigNode::Kind::null) return ScalarType::null;
  if (n.kind != ConfigNode::Kind::scalar || n.quoted) return ScalarType::string;
  const std::string& t = n.text;
  if (t.empty() || t == "~" || t == "null" || t == "Null" || t == "NULL") return ScalarType::null;
  if (t == "true" || t == "True" || t == "TRUE" || t == "false" || t == "False" || t == "FALSE")
    return ScalarType::boolean;
  if (is_digits(drop_sign(t))) return ScalarType::integer;
  if (is_real(t)) return ScalarType::real;
  return ScalarType::string;
}

ConfigNode parse_config_tree(const std::string& text, const std::string& name) {
  check_config_size(text, name);
  std::string ext = lower_extension(name);
  if (ext == "json") return parse_json_tree(text, name);
  if (ext == "yaml" || ext == "yml") return parse_yaml_tree(text, name);
  auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') return parse_json_tree(text, name);
  return parse_yaml_tree(text, name);
}

std::string read_config_file(const std::string& path) {
  // A regular file only (a FIFO or /dev/zero is refused before a byte is read), and one byte past
  // the limit read at most, so a huge download is never read whole.
  std::string text = read_bounded_file(path, "config", kMaxConfigBytes);
  check_config_size(text, path);
  return text;
}

}  // namespace gdn

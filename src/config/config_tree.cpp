#include "config/config_tree.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fmt/format.h>
#include <iterator>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "core/errors.h"

namespace gdn {
namespace {

// Deeper nesting is never meaningful in a config and would only risk the stack (YAML aliases
// can even build cycles).
constexpr std::size_t kMaxDepth = 64;

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

// ---- YAML ------------------------------------------------------------------------------------

int yaml_line(const YAML::Node& n, int fallback) { return n.Mark().line >= 0 ? n.Mark().line + 1 : fallback; }

ConfigNode from_yaml(const YAML::Node& n, int fallback_line, const std::string& name, std::size_t depth) {
  ConfigNode out;
  out.line = yaml_line(n, fallback_line);
  if (depth > kMaxDepth) throw input_error(fmt::format("{}:{}: nesting deeper than {} levels", name, out.line, kMaxDepth));
  switch (n.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      // yaml-cpp marks an empty value at the next token; the caller's line is the right one.
      out.line = fallback_line;
      break;
    case YAML::NodeType::Scalar:
      out.kind = ConfigNode::Kind::scalar;
      out.text = n.Scalar();
      out.quoted = n.Tag() != "?";  // "?" = plain scalar; quoted or explicitly tagged ones are strings
      break;
    case YAML::NodeType::Sequence:
      out.kind = ConfigNode::Kind::list;
      for (const auto& item : n) out.items.push_back(from_yaml(item, out.line, name, depth + 1));
      break;
    case YAML::NodeType::Map:
      out.kind = ConfigNode::Kind::map;
      for (auto it = n.begin(); it != n.end(); ++it) {
        int key_line = yaml_line(it->first, out.line);
        if (!it->first.IsScalar())
          throw input_error(fmt::format("{}:{}: map keys must be plain names", name, key_line));
        out.members.push_back({it->first.Scalar(), key_line, from_yaml(it->second, key_line, name, depth + 1)});
      }
      break;
  }
  return out;
}

// ---- JSON ------------------------------------------------------------------------------------

// Offsets of every '\n', to turn a byte offset into a 1-based line.
class LineMap {
 public:
  explicit LineMap(const std::string& text) {
    for (std::size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') newlines_.push_back(i);
  }
  // A '\n' belongs to the line it ends.
  int line_of(std::size_t offset) const {
    return 1 + int(std::lower_bound(newlines_.begin(), newlines_.end(), offset) - newlines_.begin());
  }

 private:
  std::vector<std::size_t> newlines_;
};

// A char iterator that records how far the JSON lexer has read, so SAX events can be given the
// line of the token just scanned (nlohmann's SAX interface reports no positions itself).
class TrackingIterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  TrackingIterator() = default;
  TrackingIterator(const char* p, const char** furthest) : p_(p), furthest_(furthest) {}
  reference operator*() const { return *p_; }
  TrackingIterator& operator++() {
    ++p_;
    if (furthest_ && p_ > *furthest_) *furthest_ = p_;
    return *this;
  }
  TrackingIterator operator++(int) {
    auto old = *this;
    ++*this;
    return old;
  }
  bool operator==(const TrackingIterator& o) const { return p_ == o.p_; }
  bool operator!=(const TrackingIterator& o) const { return p_ != o.p_; }

 private:
  const char* p_ = nullptr;
  const char** furthest_ = nullptr;
};

class JsonTreeBuilder {
 public:
  using json = nlohmann::json;

  JsonTreeBuilder(const std::string& text, const std::string& name, const char* const* furthest)
      : begin_(text.data()), furthest_(furthest), lines_(text), name_(name) {}

  bool null() { return add_scalar(ConfigNode::Kind::null, "null", false); }
  bool boolean(bool b) { return add_scalar(ConfigNode::Kind::scalar, b ? "true" : "false", false); }
  bool number_integer(json::number_integer_t v) { return add_scalar(ConfigNode::Kind::scalar, std::to_string(v), false); }
  bool number_unsigned(json::number_unsigned_t v) { return add_scalar(ConfigNode::Kind::scalar, std::to_string(v), false); }
  bool number_float(json::number_float_t, const json::string_t& raw) {
    return add_scalar(ConfigNode::Kind::scalar, raw, false);
  }
  bool string(json::string_t& s) { return add_scalar(ConfigNode::Kind::scalar, s, true); }
  bool binary(json::binary_t&) { return false; }  // never produced by the text parser
  bool start_object(std::size_t) { return open(ConfigNode::Kind::map); }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(ConfigNode::Kind::list); }
  bool end_array() { return close(); }
  bool key(json::string_t& k) {
    key_ = k;
    key_line_ = current_line();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    error_line_ = lines_.line_of(position > 0 ? position - 1 : 0);
    error_ = ex.what();
    // "[json.exception.parse_error.101] parse error at line 2, column 3: syntax error ..." -> the reason
    // (the line is ours; nlohmann's own position is dropped with the prefix).
    if (auto id_end = error_.find("] "); error_.rfind("[json.exception", 0) == 0 && id_end != std::string::npos)
      error_ = error_.substr(id_end + 2);
    if (error_.rfind("parse error", 0) == 0) {
      auto colon = error_.find(": ");
      if (colon != std::string::npos) error_ = error_.substr(colon + 2);
    }
    return false;
  }

  ConfigNode take_root() { return std::move(root_); }
  [[noreturn]] void throw_error() const {
    if (error_.empty()) throw input_error(fmt::format("{}:{}: {}", name_, depth_line_, depth_error_));
    throw input_error(fmt::format("{}:{}: JSON syntax error: {}", name_, error_line_, error_));
  }

 private:
  int current_line() const {
    std::size_t read = std::size_t(*furthest_ - begin_);
    return lines_.line_of(read > 0 ? read - 1 : 0);
  }

  ConfigNode* add(ConfigNode n) {
    if (stack_.empty()) {
      root_ = std::move(n);
      return &root_;
    }
    ConfigNode& top = *stack_.back();
    if (top.is_list()) {
      top.items.push_back(std::move(n));
      return &top.items.back();
    }
    top.members.push_back({key_, key_line_, std::move(n)});
    return &top.members.back().value;
  }

  bool add_scalar(ConfigNode::Kind kind, std::string text, bool quoted) {
    ConfigNode n;
    n.kind = kind;
    n.line = current_line();
    n.text = std::move(text);
    n.quoted = quoted;
    add(std::move(n));
    return true;
  }

  bool open(ConfigNode::Kind kind) {
    ConfigNode n;
    n.kind = kind;
    n.line = current_line();
    if (stack_.size() >= kMaxDepth) {
      depth_line_ = n.line;
      depth_error_ = fmt::format("nesting deeper than {} levels", kMaxDepth);
      return false;
    }
    // Only the innermost open container grows, so pointers to the outer ones stay valid.
    stack_.push_back(add(std::move(n)));
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  const char* begin_;
  const char* const* furthest_;
  LineMap lines_;
  std::string name_;
  ConfigNode root_;
  std::vector<ConfigNode*> stack_;
  std::string key_;
  int key_line_ = 1;
  int error_line_ = 1;
  std::string error_;
  int depth_line_ = 1;
  std::string depth_error_;
};

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

ConfigNode parse_yaml_tree(const std::string& text, const std::string& name) {
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    int line = e.mark.line >= 0 ? e.mark.line + 1 : 1;
    throw input_error(fmt::format("{}:{}: YAML syntax error: {}", name, line, e.msg));
  }
  return from_yaml(doc, 1, name, 0);
}

ConfigNode parse_json_tree(const std::string& text, const std::string& name) {
  const char* furthest = text.data();
  JsonTreeBuilder builder(text, name, &furthest);
  TrackingIterator first(text.data(), &furthest), last(text.data() + text.size(), nullptr);
  bool ok = nlohmann::json::sax_parse(first, last, &builder);
  if (!ok) builder.throw_error();
  return builder.take_root();
}

ConfigNode parse_config_tree(const std::string& text, const std::string& name) {
  std::string ext = lower_extension(name);
  if (ext == "json") return parse_json_tree(text, name);
  if (ext == "yaml" || ext == "yml") return parse_yaml_tree(text, name);
  auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') return parse_json_tree(text, name);
  return parse_yaml_tree(text, name);
}

}  // namespace gdn

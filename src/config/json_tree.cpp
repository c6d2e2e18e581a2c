// JSON -> ConfigNode through nlohmann's SAX interface (its parser keeps an explicit stack, no
// recursion), counting every node against the config limits (config_limits.h) as it is built.
#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

#include "config/config_limits.h"
#include "config/config_tree.h"

namespace gdn {
namespace {

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

// Limits are enforced by throwing from the callbacks (nlohmann's parser does not catch them).
class JsonTreeBuilder {
 public:
  using json = nlohmann::json;

  JsonTreeBuilder(const std::string& text, const std::string& name, const char* const* furthest)
      : begin_(text.data()), furthest_(furthest), lines_(text), name_(name), budget_(name) {}

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
    key_line_ = current_line();
    budget_.add_node(key_line_, stack_.size());
    budget_.check_scalar(key_line_, k.size());
    key_ = k;
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
    throw input_error(fmt::format("{}:{}: JSON syntax error: {}", name_, error_line_, error_));
  }

 private:
  int current_line() const {
    std::size_t read = std::size_t(*furthest_ - begin_);
    return lines_.line_of(read > 0 ? read - 1 : 0);
  }

  ConfigNode* add(ConfigNode n) {
    budget_.add_node(n.line, stack_.size());
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
    budget_.check_scalar(n.line, text.size());
    n.text = std::move(text);
    n.quoted = quoted;
    add(std::move(n));
    return true;
  }

  bool open(ConfigNode::Kind kind) {
    ConfigNode n;
    n.kind = kind;
    n.line = current_line();
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
  TreeBudget budget_;
  ConfigNode root_;
  std::vector<ConfigNode*> stack_;
  std::string key_;
  int key_line_ = 1;
  int error_line_ = 1;
  std::string error_;
};

}  // namespace

ConfigNode parse_json_tree(const std::string& text, const std::string& name) {
  const char* furthest = text.data();
  JsonTreeBuilder builder(text, name, &furthest);
  TrackingIterator first(text.data(), &furthest), last(text.data() + text.size(), nullptr);
  bool ok = nlohmann::json::sax_parse(first, last, &builder);
  if (!ok) builder.throw_error();
  return builder.take_root();
}

}  // namespace gdn

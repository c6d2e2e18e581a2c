// YAML -> ConfigNode, built from yaml-cpp's parse events rather than from YAML::Load, so the
// reader stops at the first anchor (YAML::Load expands aliases eagerly: ten lines of nested
// aliases become billions of nodes) and at the first node past a limit (config_limits.h), before
// anything large exists.
#include <istream>
#include <streambuf>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include "config/config_limits.h"
#include "config/config_tree.h"

namespace gdn {
namespace {

int line_of(const YAML::Mark& m, int fallback) { return m.line >= 0 ? m.line + 1 : fallback; }

// How far yaml-cpp may read past the last event: a whole value of the largest size, twice over.
constexpr std::size_t kMaxLookahead = 2 * kMaxScalarBytes;

// Hands yaml-cpp the text (it reads through sgetn) and refuses to read further than
// kMaxLookahead past the last event. yaml-cpp's scanner keeps every token of a flow list or map
// that might turn out to be a mapping key until it knows, and emits nothing meanwhile: 1 MiB of
// "[[[[" would queue some 250 MB of tokens before the first event could stop it.
class BoundedLookahead final : public std::streambuf {
 public:
  BoundedLookahead(const std::string& text, TreeBudget& budget) : budget_(budget) {
    char* begin = const_cast<char*>(text.data());  // the get area is only read
    setg(begin, begin, begin + text.size());
  }
  void event_at(const YAML::Mark& m) {
    if (m.pos >= 0 && std::size_t(m.pos) >= last_event_pos_) last_event_pos_ = std::size_t(m.pos), last_event_line_ = line_of(m, 1);
  }

 protected:
  std::streamsize xsgetn(char* s, std::streamsize n) override {
    const std::size_t at = std::size_t(gptr() - eback());
    if (at > last_event_pos_ + kMaxLookahead)
      budget_.fail(last_event_line_, fmt::format("more than {} KiB of YAML after this line without a complete value "
                                                 "(a value may have at most {} KiB; a flow list or map counts whole "
                                                 "while it may still be a mapping key)",
                                                 kMaxLookahead >> 10, kMaxScalarBytes >> 10));
    return std::streambuf::xsgetn(s, n);
  }

 private:
  TreeBudget& budget_;
  std::size_t last_event_pos_ = 0;
  int last_event_line_ = 1;
};

class YamlTreeBuilder final : public YAML::EventHandler {
 public:
  YamlTreeBuilder(TreeBudget& budget, BoundedLookahead& input) : budget_(budget), input_(input) {}

  ConfigNode take_root() { return std::move(root_); }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}

  void OnAnchor(const YAML::Mark& mark, const std::string& anchor_name) override {
    constexpr std::size_t kShown = 40;
    refuse_anchor(line_of(mark, 1), "&" + (anchor_name.size() > kShown ? anchor_name.substr(0, kShown) + "..." : anchor_name));
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { refuse_anchor(line_of(mark, 1), "an alias"); }

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    input_.event_at(mark);
    ConfigNode n;
    // yaml-cpp marks an empty value at the next token; the enclosing key's (or list's) line is right.
    n.line = fallback_line();
    check_anchor(anchor, line_of(mark, n.line));
    add(std::move(n), false);
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor, const std::string& value) override {
    input_.event_at(mark);
    ConfigNode n;
    n.kind = ConfigNode::Kind::scalar;
    n.line = line_of(mark, fallback_line());
    check_anchor(anchor, n.line);
    budget_.check_scalar(n.line, value.size());
    n.text = value;
    n.quoted = tag != "?";  // "?" = plain scalar; quoted or explicitly tagged ones are strings
    add(std::move(n), false);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open(ConfigNode::Kind::list, mark, anchor);
  }
  void OnSequenceEnd() override { stack_.pop_back(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open(ConfigNode::Kind::map, mark, anchor);
  }
  void OnMapEnd() override { stack_.pop_back(); }

 private:
  // An open list or map, and for a map the key waiting for its value.
  struct Frame {
    ConfigNode* node;
    bool have_key = false;
    std::string key;
    int key_line = 1;
  };

  [[noreturn]] void refuse_anchor(int line, const std::string& what) const {
    budget_.fail(line, fmt::format("YAML anchors and aliases are not supported (got {}); write the values out, "
                                   "or put what cases share in defaults",
                                   what));
  }
  void check_anchor(YAML::anchor_t anchor, int line) const {
    if (anchor != YAML::NullAnchor) refuse_anchor(line, "an anchor");
  }

  int fallback_line() const {
    if (stack_.empty()) return 1;
    const Frame& top = stack_.back();
    return top.have_key ? top.key_line : top.node->line;
  }

  void open(ConfigNode::Kind kind, const YAML::Mark& mark, YAML::anchor_t anchor) {
    input_.event_at(mark);
    ConfigNode n;
    n.kind = kind;
    n.line = line_of(mark, fallback_line());
    check_anchor(anchor, n.line);
    // Only the innermost open container grows, so pointers to the outer ones stay valid.
    ConfigNode* added = add(std::move(n), true);
    stack_.push_back(Frame{added, false, {}, 1});
  }

  // Places a finished scalar or a newly opened container; returns where it now lives.
  ConfigNode* add(ConfigNode n, bool container) {
    budget_.add_node(n.line, stack_.size());
    if (stack_.empty()) {
      root_ = std::move(n);
      return &root_;
    }
    Frame& top = stack_.back();
    if (top.node->is_list()) {
      top.node->items.push_back(std::move(n));
      return &top.node->items.back();
    }
    if (!top.have_key) {
      if (container || !n.is_scalar()) budget_.fail(n.line, "map keys must be plain names");
      top.have_key = true;
      top.key = std::move(n.text);
      top.key_line = n.line;
      return nullptr;
    }
    top.have_key = false;
    top.node->members.push_back({std::move(top.key), top.key_line, std::move(n)});
    return &top.node->members.back().value;
  }

  TreeBudget& budget_;
  BoundedLookahead& input_;
  ConfigNode root_;
  std::vector<Frame> stack_;
};

}  // namespace

ConfigNode parse_yaml_tree(const std::string& text, const std::string& name) {
  TreeBudget budget(name);
  BoundedLookahead buffer(text, budget);
  std::istream in(&buffer);
  YamlTreeBuilder builder(budget, buffer);
  try {
    YAML::Parser parser(in);
    parser.HandleNextDocument(builder);  // the first document, as YAML::Load reads it
  } catch (const YAML::Exception& e) {
    int line = e.mark.line >= 0 ? e.mark.line + 1 : 1;
    throw input_error(fmt::format("{}:{}: YAML syntax error: {}", name, line, e.msg));
  }
  return builder.take_root();
}

}  // namespace gdn

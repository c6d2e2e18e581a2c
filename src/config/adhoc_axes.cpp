#include "config/adhoc_axes.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "config/config_tree.h"
#include "core/axes.h"
#include "core/errors.h"
#include "core/fnv.h"

namespace gdn {
namespace {

// Lines of the in-memory tree, each naming the flag that wrote the node.
constexpr int kLineSweep = 1;    // the whole command line: errors about a whole point
constexpr int kLineOp = 2;       // --op
constexpr int kLineVariant = 3;  // --variant
constexpr int kLineFirstAxis = 4;

// Keys with a flag of their own.
bool has_own_flag(const std::string& key) { return key == "op" || key == "variant" || key == "seed" || key == "name"; }

ConfigNode scalar(const std::string& text, int line) {
  ConfigNode n;
  n.kind = ConfigNode::Kind::scalar;
  n.text = text;
  n.line = line;
  return n;
}

struct AxisFlag {
  std::string key, values, shown;  // shown: "-a key=values"
  std::size_t rank;                // position of the key in the config's key order
};

AxisFlag split_flag(const std::string& flag) {
  const std::string shown = "-a " + flag;
  const auto eq = flag.find('=');
  if (eq == std::string::npos || eq == 0)
    throw input_error(fmt::format("{}: expected KEY=VALUE[,VALUE...], e.g. -a batch=1,8,64", shown));
  AxisFlag a{flag.substr(0, eq), flag.substr(eq + 1), shown, 0};
  if (has_own_flag(a.key))
    throw input_error(fmt::format("{}: {} is set by --{}, not by -a", shown, a.key, a.key == "name" ? "op" : a.key));
  const auto& keys = case_keys();
  a.rank = std::size_t(std::find(keys.begin(), keys.end(), a.key) - keys.begin());
  return a;
}

// KEY=VALUE,VALUE: one value is a scalar, several a list, as `key: [v, v]` in YAML.
ConfigNode value_node(const AxisFlag& a, int line) {
  std::vector<ConfigNode> items;
  const char sep = adhoc_value_separator(a.key);
  std::size_t start = 0;
  while (true) {
    const auto end = a.values.find(sep, start);
    items.push_back(scalar(a.values.substr(start, end == std::string::npos ? std::string::npos : end - start), line));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (items.size() == 1) return items.front();
  ConfigNode list;
  list.kind = ConfigNode::Kind::list;
  list.line = line;
  list.items = std::move(items);
  return list;
}

void add_member(ConfigNode& map, const std::string& key, ConfigNode value) {
  map.members.push_back({key, value.line, std::move(value)});
}

// Every flag split, each key once, in the axis table's order: the same flags in any order make
// the same sweep and name.
std::vector<AxisFlag> read_flags(const std::vector<std::string>& axes) {
  std::vector<AxisFlag> flags;
  for (const auto& f : axes) {
    AxisFlag a = split_flag(f);
    for (const auto& seen : flags)
      if (seen.key == a.key)
        throw input_error(fmt::format("{}: {} is given twice (first by {}); list every value in one flag: -a {}=A{}B",
                                      a.shown, a.key, seen.shown, a.key, adhoc_value_separator(a.key)));
    flags.push_back(std::move(a));
  }
  std::stable_sort(flags.begin(), flags.end(), [](const AxisFlag& x, const AxisFlag& y) { return x.rank < y.rank; });
  return flags;
}

// The ops a key applies to; every op for an unknown key, so the schema names it.
unsigned key_ops(const std::string& key) {
  const AxisDef* axis = find_axis(key);
  return axis ? axis->ops : kBitAll;
}

// The op a case of a file names, itself or through `defaults`; nullopt when it names none
// readable (the schema then says what is wrong).
std::optional<OpKind> case_op(const ConfigNode& c, const ConfigNode* defaults) {
  for (const ConfigNode* map : {&c, defaults}) {
    if (!map || !map->is_map()) continue;
    for (const auto& m : map->members)
      if (m.key == "op" && m.value.is_scalar()) return parse_op(m.value.text);
  }
  return std::nullopt;
}

}  // namespace

char adhoc_value_separator(const std::string& key) { return key == "plan" ? ';' : ','; }

SweepConfig adhoc_config(const std::string& op, const std::vector<std::string>& axes, const std::string& variant) {
  if (op.empty())
    throw input_error("-a builds a sweep of one op: pass --op prefill, decode or mtp (or --config FILE, whose cases "
                      "-a then overrides)");
  const std::vector<AxisFlag> flags = read_flags(axes);
  if (op == "prefill" && std::none_of(flags.begin(), flags.end(), [](const AxisFlag& a) { return a.key == "seqlens"; }))
    throw input_error("--op prefill needs its sequences: -a seqlens=SET[,SET...], e.g. -a seqlens=1x8192,4096x8");
  if (op == "mtp" && std::none_of(flags.begin(), flags.end(), [](const AxisFlag& a) { return a.key == "tokens"; }))
    throw input_error("--op mtp needs its draft tokens: -a tokens=T[,T...], e.g. -a tokens=2,4");

  std::vector<std::string> where{"", "--op " + op, "--variant " + variant};
  std::string name = "--op " + op;
  ConfigNode one_case;
  one_case.kind = ConfigNode::Kind::map;
  one_case.line = kLineSweep;
  add_member(one_case, "op", scalar(op, kLineOp));
  if (!variant.empty()) add_member(one_case, "variant", scalar(variant, kLineVariant));
  for (std::size_t i = 0; i < flags.size(); ++i) {
    const int line = kLineFirstAxis + int(i);
    add_member(one_case, flags[i].key, value_node(flags[i], line));
    where.push_back(flags[i].shown);
    name += " " + flags[i].shown;
  }
  if (!variant.empty()) name += " --variant " + variant;
  where[kLineSweep - 1] = name;

  ConfigNode cases;
  cases.kind = ConfigNode::Kind::list;
  cases.items.push_back(std::move(one_case));
  ConfigNode root;
  root.kind = ConfigNode::Kind::map;
  add_member(root, "cases", std::move(cases));

  // "cases[0].batch[1]" reads "batch[1]"; a key path alone is already in the flag.
  auto locate = [where](int line, const std::string& path) {
    const std::string& flag = where.at(std::size_t(std::clamp(line, 1, int(where.size())) - 1));
    std::string rel = path.rfind("cases[0]", 0) == 0 ? path.substr(std::min(path.size(), std::size_t(9))) : path;
    return rel.find('[') == std::string::npos ? flag + ": " : flag + ": " + rel + ": ";
  };
  const std::string label = "command line: " + name;
  return build_config_tree(root, label, fmt::format("{:016x}", fnv1a(label)), locate);
}

SweepConfig config_with_axes(const std::string& path, const std::vector<std::string>& axes) {
  const std::vector<AxisFlag> flags = read_flags(axes);
  const std::string text = read_config_file(path);
  ConfigNode root = parse_config_tree(text, path);
  // Overrides carry lines past any file's, each naming its flag.
  constexpr int kLineOverride = 1 << 30;
  std::string name = path;
  std::vector<std::string> shown;
  const ConfigNode* defaults = nullptr;
  ConfigNode* cases = nullptr;
  if (root.is_map())
    for (auto& m : root.members) {
      if (m.key == "defaults") defaults = &m.value;
      if (m.key == "cases" && m.value.is_list()) cases = &m.value;
    }
  for (std::size_t i = 0; i < flags.size() && cases; ++i) {
    const AxisFlag& f = flags[i];
    bool taken = false;
    for (auto& c : cases->items) {
      const auto op = case_op(c, defaults);
      if (!c.is_map() || (op && !(key_ops(f.key) & op_bit(*op)))) continue;
      std::erase_if(c.members, [&](const ConfigMember& m) { return m.key == f.key; });
      add_member(c, f.key, value_node(f, kLineOverride + int(i)));
      taken = true;
    }
    if (!taken)
      throw input_error(fmt::format("{}: no case of {} is of an op that takes {}", f.shown, path, f.key));
    shown.push_back(f.shown);
    name += " " + f.shown;
  }
  auto locate = [path, shown](int line, const std::string& at) {
    const std::string where = line >= kLineOverride ? shown.at(std::size_t(line - kLineOverride))
                                                    : fmt::format("{}:{}", path, line);
    return at.empty() ? where + ": " : where + ": " + at + ": ";
  };
  // The file's bytes and the flags: another file or other flags are another sweep.
  return build_config_tree(root, name, fmt::format("{:016x}", fnv1a(name, fnv1a(text))), locate);
}

}  // namespace gdn

// Sweep configs: schema checks and cartesian expansion over the tree of config_tree.h, so YAML
// and JSON go through exactly the same rules. README "Config format" is the user-facing reference.
#include "config/config.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <fmt/format.h>
#include <functional>
#include <map>

#include "config/config_tree.h"
#include "core/axes.h"
#include "core/checkpoints.h"
#include "core/errors.h"
#include "core/fnv.h"
#include "core/op.h"
#include "core/plan_spec.h"
#include "core/registry.h"
#include "core/state_quant.h"

namespace gdn {
namespace {

constexpr uint64_t kDefaultSeed = 20260101;
// A typo such as a 7-axis product should fail loudly instead of queueing a week of work; the cap
// also bounds what a malformed config costs to reject (every point is built and checked first:
// 1,000,000 took 1 s and 137 MB, 100,000 takes a tenth).
constexpr std::size_t kMaxPoints = 100'000;
constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 48;

// ---- messages and typed scalar reads -----------------------------------------------------------

std::string join(const std::vector<std::string>& items) { return fmt::format("{}", fmt::join(items, ", ")); }

std::string child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

std::string element(const std::string& path, std::size_t i) { return fmt::format("{}[{}]", path, i); }

std::string join_dims(const std::vector<int64_t>& dims) { return fmt::format("{}", fmt::join(dims, ", ")); }

// Formats every error as "FILE:LINE: KEY.PATH: problem (got VALUE)".
// A tree not read from a file (the command line's -a flags) names its places with `locate`.
class Checker {
 public:
  explicit Checker(std::string file, ConfigLocator locate = {}) : file_(std::move(file)), locate_(std::move(locate)) {}

  [[noreturn]] void fail(int line, const std::string& path, std::string_view problem, std::string_view got = {}) const {
    std::string msg = locate_ ? locate_(line, path) : fmt::format("{}:{}: ", file_, line);
    if (!path.empty() && !locate_) msg += path + ": ";
    msg += problem;
    if (!got.empty()) msg += fmt::format(" (got {})", got);
    throw input_error(msg);
  }
  [[noreturn]] void fail(const ConfigNode& n, const std::string& path, std::string_view problem) const {
    fail(n.line, path, problem, n.describe());
  }

  int64_t integer(const ConfigNode& n, const std::string& path, int64_t lo, int64_t hi = INT64_MAX) const {
    if (!n.is_scalar() || scalar_type(n) != ScalarType::integer) fail(n, path, expected("an integer", n));
    std::string_view t = n.text;
    if (t.front() == '+') t.remove_prefix(1);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || end != t.data() + t.size()) fail(n, path, "integer out of range");
    if (v < lo) fail(n, path, fmt::format("must be >= {}", lo));
    if (v > hi) fail(n, path, fmt::format("must be <= {}", hi));
    return v;
  }

  double number(const ConfigNode& n, const std::string& path) const {
    auto type = scalar_type(n);
    if (!n.is_scalar() || (type != ScalarType::integer && type != ScalarType::real)) fail(n, path, expected("a number", n));
    std::string_view t = n.text;
    if (t.front() == '+') t.remove_prefix(1);
    double v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || end != t.data() + t.size() || !std::isfinite(v)) fail(n, path, "number out of range");
    return v;
  }

  bool boolean(const ConfigNode& n, const std::string& path) const {
    if (!n.is_scalar() || scalar_type(n) != ScalarType::boolean) fail(n, path, expected("true or false", n));
    return n.text.front() == 't' || n.text.front() == 'T';
  }

  // Any written scalar; names may well look like numbers.
  std::string text(const ConfigNode& n, const std::string& path) const {
    if (!n.is_scalar() || scalar_type(n) == ScalarType::null) fail(n, path, expected("a string", n));
    return n.text;
  }

  template <class E>
  E choice(const ConfigNode& n, const std::string& path, std::optional<E> (*parse)(std::string_view),
           const std::vector<E>& allowed) const {
    std::vector<std::string> names;
    for (E e : allowed) names.emplace_back(to_string(e));
    if (!n.is_scalar() || scalar_type(n) == ScalarType::null)
      fail(n, path, expected(fmt::format("one of {}", join(names)), n));
    auto v = parse(n.text);
    if (!v || std::find(allowed.begin(), allowed.end(), *v) == allowed.end())
      fail(n, path, fmt::format("must be one of {}", join(names)));
    return *v;
  }

 private:
  static std::string expected(std::string_view what, const ConfigNode& n) {
    if (n.is_list()) return fmt::format("expected {}, not a list", what);
    if (n.is_map()) return fmt::format("expected {}, not a map", what);
    return fmt::format("expected {}", what);
  }

  std::string file_;
  ConfigLocator locate_;
};

// ---- axes ----------------------------------------------------------------------------------------

struct AxisValue;

// One sweep point under construction; `pool` needs the batch, so it is resolved last.
struct Point {
  Shape shape;
  int64_t pool_slots = 0;      // `pool: N`
  int64_t pool_per_row = 0;    // `pool: "Nx"`
  const AxisValue* pool_source = nullptr;
};

struct AxisValue {
  int line = 1;
  std::string path;
  std::string shown;  // the value as written, for messages
  std::function<void(Point&)> apply;
};

using Axis = std::vector<AxisValue>;

struct NamedAxis {
  std::string key;
  Axis values;
};

// An axis is one value or a non-empty list of values.
template <class Fn>
void for_each_value(const Checker& c, const ConfigNode& n, const std::string& path, Fn&& fn) {
  if (n.is_map()) c.fail(n, path, "expected a value or a list of values, not a map");
  if (!n.is_list()) return fn(n, path);
  if (n.items.empty()) c.fail(n, path, "empty list: an axis needs at least one value");
  for (std::size_t i = 0; i < n.items.size(); ++i) fn(n.items[i], element(path, i));
}

template <class Read, class Set>
Axis simple_axis(const Checker& c, const ConfigNode& n, const std::string& path, Read read, Set set) {
  Axis out;
  for_each_value(c, n, path, [&](const ConfigNode& v, const std::string& p) {
    auto value = read(v, p);
    out.push_back({v.line, p, v.describe(), [value, set](Point& pt) { set(pt, value); }});
  });
  return out;
}

Axis bool_axis(const Checker& c, const ConfigNode& n, const std::string& path, void (*set)(Point&, bool)) {
  return simple_axis(c, n, path, [&](const ConfigNode& v, const std::string& p) { return c.boolean(v, p); }, set);
}

// "16/32" or [16, 32].
AxisValue heads_pair(const Checker& c, const ConfigNode& n, const std::string& path) {
  int64_t hq = 0, hv = 0;
  if (n.is_list()) {
    if (n.items.size() != 2) c.fail(n, path, "a heads pair has exactly two values [h_qk, h_v]");
    hq = c.integer(n.items[0], element(path, 0), 1, INT_MAX);
    hv = c.integer(n.items[1], element(path, 1), 1, INT_MAX);
  } else {
    auto slash = n.text.find('/');
    std::string a = slash == std::string::npos ? "" : n.text.substr(0, slash);
    std::string b = slash == std::string::npos ? "" : n.text.substr(slash + 1);
    auto digits = [](const std::string& s) {
      return !s.empty() && s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos;
    };
    if (!n.is_scalar() || !digits(a) || !digits(b))
      c.fail(n, path, "expected a heads pair h_qk/h_v such as \"16/32\" or [16, 32]");
    hq = std::stoll(a), hv = std::stoll(b);
    if (hq < 1 || hv < 1) c.fail(n, path, "head counts must be >= 1");
  }
  std::string shown = fmt::format("{}/{}", hq, hv);
  if (hv % hq != 0) c.fail(n.line, path, "h_v % h_qk must be 0", shown);
  return {n.line, path, shown, [hq, hv](Point& pt) {
            pt.shape.h_qk = int(hq);
            pt.shape.h_v = int(hv);
          }};
}

// `heads: [16, 32]` is one pair; any other list is a list of pairs.
Axis parse_heads(const Checker& c, const ConfigNode& n, const std::string& path) {
  bool one_pair = n.is_list() && n.items.size() == 2 && n.items[0].is_scalar() && n.items[1].is_scalar() &&
                  scalar_type(n.items[0]) == ScalarType::integer && scalar_type(n.items[1]) == ScalarType::integer;
  if (one_pair || !n.is_list()) {
    if (n.is_map()) c.fail(n, path, "expected a heads pair or a list of pairs, not a map");
    return {heads_pair(c, n, path)};
  }
  Axis out;
  for_each_value(c, n, path, [&](const ConfigNode& v, const std::string& p) { out.push_back(heads_pair(c, v, p)); });
  return out;
}

// One sequence set: "1x8192" / "4096+4096", a single length, or a list of explicit lengths; an
// explicit length may be 0 (an empty sequence) if the set has a token.
AxisValue sequence_set(const Checker& c, const ConfigNode& n, const std::string& path) {
  std::vector<int64_t> lengths;
  if (n.is_list()) {
    if (n.items.empty()) c.fail(n, path, "empty list of sequence lengths");
    // 0 is an empty sequence (a repeated cu_seqlens entry), legal inside a batch.
    for (std::size_t i = 0; i < n.items.size(); ++i) lengths.push_back(c.integer(n.items[i], element(path, i), 0));
  } else if (n.is_scalar() && scalar_type(n) == ScalarType::integer) {
    lengths.push_back(c.integer(n, path, 1));
  } else if (n.is_scalar() && scalar_type(n) == ScalarType::string) {
    try {
      lengths = parse_seqlens(n.text);
    } catch (const std::invalid_argument& e) {
      c.fail(n.line, path, e.what());  // the reason already quotes the set
    }
  } else {
    c.fail(n, path, "expected a sequence set such as \"1x8192\" or \"4096+4096\", a length, or a list of lengths");
  }
  int64_t total = 0;
  for (auto l : lengths)
    if (__builtin_add_overflow(total, l, &total)) c.fail(n, path, "total tokens overflow int64");
  if (total < 1) c.fail(n, path, "a sequence set needs at least one token (empty sequences are legal beside others)");
  return {n.line, path, n.describe(), [lengths](Point& pt) { pt.shape.seqlens = lengths; }};
}

// A list is a list of sets, so explicit lengths must be nested: [[100, 200, 37]].
Axis parse_seqlens_axis(const Checker& c, const ConfigNode& n, const std::string& path) {
  Axis out;
  for_each_value(c, n, path, [&](const ConfigNode& v, const std::string& p) { out.push_back(sequence_set(c, v, p)); });
  return out;
}

Axis parse_pool(const Checker& c, const ConfigNode& n, const std::string& path) {
  Axis out;
  for_each_value(c, n, path, [&](const ConfigNode& v, const std::string& p) {
    int64_t slots = 0, per_row = 0;
    if (v.is_scalar() && scalar_type(v) == ScalarType::integer) {
      slots = c.integer(v, p, 1);
    } else {
      std::string t = v.is_scalar() ? v.text : "";
      std::string digits = t.empty() ? "" : t.substr(0, t.size() - 1);
      if (t.size() < 2 || t.back() != 'x' || digits.size() > 12 ||
          digits.find_first_not_of("0123456789") != std::string::npos)
        c.fail(v, p, "expected a slot count or \"Nx\" (N slots per batch row, or per sequence for prefill)");
      per_row = std::stoll(digits);
      if (per_row < 1) c.fail(v, p, "the per-row pool factor must be >= 1");
    }
    out.push_back({v.line, p, v.describe(), [slots, per_row](Point& pt) {
                     pt.pool_slots = slots;
                     pt.pool_per_row = per_row;
                   }});
  });
  return out;
}

// `checkpoints`: an int C (every C tokens, a multiple of 64; 0: none) or "at:P+P/P" (explicit
// positions, one group per sequence, or one group for all; spread over the sequences by finish_point).
Axis parse_checkpoints(const Checker& c, const ConfigNode& n, const std::string& path) {
  Axis out;
  for_each_value(c, n, path, [&](const ConfigNode& v, const std::string& p) {
    if (v.is_scalar() && scalar_type(v) == ScalarType::integer) {
      const int64_t every = c.integer(v, p, 0);
      if (every % kCheckpointGranule != 0)
        c.fail(v, p, fmt::format("checkpoints every C tokens needs C to be a multiple of {} (0: none)", kCheckpointGranule));
      out.push_back({v.line, p, v.describe(), [every](Point& pt) { pt.shape.checkpoint_every = every; }});
      return;
    }
    std::vector<std::vector<int64_t>> groups;
    try {
      groups = parse_checkpoint_at(v.is_scalar() ? v.text : std::string());
    } catch (const std::invalid_argument& e) {
      c.fail(v, p, fmt::format("expected an int C (every C tokens) or explicit positions \"at:P+P/P\": {}", e.what()));
    }
    out.push_back({v.line, p, v.describe(), [groups](Point& pt) { pt.shape.checkpoint_at = groups; }});
  });
  return out;
}

// A plan spec or a list of them: "default" (or "") is each variant's default plan; the rest are
// normalised here (docs/plans.md) and checked against the matched variants by check_plans.
Axis parse_plan_axis(const Checker& c, const ConfigNode& n, const std::string& path) {
  Axis out;
  for_each_value(c, n, path, [&](const ConfigNode& v, const std::string& p) {
    std::string spec;
    try {
      spec = normalize_plan_spec(v.is_scalar() && scalar_type(v) == ScalarType::null ? std::string() : c.text(v, p));
    } catch (const std::invalid_argument& e) {
      c.fail(v, p, e.what());
    }
    out.push_back({v.line, p, v.describe(), [spec](Point& pt) { pt.shape.plan = spec; }});
  });
  return out;
}

// ---- keys -----------------------------------------------------------------------------------------

using AxisParser = std::function<Axis(const Checker&, const ConfigNode&, const std::string&)>;

struct KeySpec {
  std::string key;
  unsigned ops;
  AxisParser axis;  // empty for the per-case scalars (name, op, variant, seed, threshold, verify_heads)
};

template <class E>
AxisParser enum_axis(std::optional<E> (*parse)(std::string_view), std::vector<E> allowed, void (*set)(Point&, E)) {
  return [parse, allowed, set](const Checker& c, const ConfigNode& n, const std::string& path) {
    return simple_axis(c, n, path, [&](const ConfigNode& v, const std::string& p) { return c.choice(v, p, parse, allowed); },
                       set);
  };
}

AxisParser flag_axis(void (*set)(Point&, bool)) {
  return [set](const Checker& c, const ConfigNode& n, const std::string& path) { return bool_axis(c, n, path, set); };
}

AxisParser int_axis(int64_t lo, int64_t hi, void (*set)(Point&, int64_t)) {
  return [lo, hi, set](const Checker& c, const ConfigNode& n, const std::string& path) {
    return simple_axis(c, n, path, [&](const ConfigNode& v, const std::string& p) { return c.integer(v, p, lo, hi); }, set);
  };
}

// Every value of an enum, for axes that accept all of them.
template <class E> std::vector<E> every(std::optional<E> (*parse)(std::string_view)) {
  std::vector<E> out;
  for (const auto& name : valid_names<E>()) out.push_back(*parse(name));
  return out;
}

// How each axis of the table (core/axes.h) is read from a config.
AxisParser axis_parser(std::string_view key) {
  static const std::map<std::string_view, AxisParser> parsers{
      {"inputs", enum_axis(parse_input_dist, every(parse_input_dist), +[](Point& p, InputDist v) { p.shape.inputs = v; })},
      {"input_dtype", enum_axis(parse_dtype, {DType::bf16, DType::f16}, +[](Point& p, DType v) { p.shape.input_dtype = v; })},
      {"gate", enum_axis(parse_gate, every(parse_gate), +[](Point& p, GateForm v) { p.shape.gate = v; })},
      {"l2norm", flag_axis(+[](Point& p, bool v) { p.shape.l2norm = v; })},
      {"scale",
       [](const Checker& c, const ConfigNode& n, const std::string& path) {
         return simple_axis(
             c, n, path,
             [&](const ConfigNode& v, const std::string& p) {
               double s = c.number(v, p);
               if (s < 0) c.fail(v, p, "must be >= 0 (0 = the default K^-1/2)");
               return s;
             },
             [](Point& p, double v) { p.shape.scale = v; });
       }},
      {"state_dtype", enum_axis(parse_dtype, {DType::f32, DType::bf16, DType::fp8e4m3, DType::i8},
                                      +[](Point& p, DType v) { p.shape.state_dtype = v; })},
      {"layout", enum_axis(parse_layout, every(parse_layout), +[](Point& p, Layout v) { p.shape.layout = v; })},
      {"indices",
       enum_axis(parse_index_pattern, every(parse_index_pattern), +[](Point& p, IndexPattern v) { p.shape.indices = v; })},
      {"index_dtype", enum_axis(parse_dtype, {DType::i64, DType::i32}, +[](Point& p, DType v) { p.shape.index_dtype = v; })},
      {"cache_intermediate", flag_axis(+[](Point& p, bool v) { p.shape.cache_intermediate = v; })},
      {"update_state", flag_axis(+[](Point& p, bool v) { p.shape.update_state = v; })},
      {"rollback", flag_axis(+[](Point& p, bool v) { p.shape.rollback = v; })},
      {"h0", flag_axis(+[](Point& p, bool v) { p.shape.has_h0 = v; })},
      {"heads", parse_heads},
      {"head_dim", int_axis(1, INT_MAX, +[](Point& p, int64_t v) { p.shape.dk = p.shape.dv = int(v); })},
      {"pool", parse_pool},
      {"seqlens", parse_seqlens_axis},
      {"checkpoints", parse_checkpoints},
      {"tokens", int_axis(2, 64, +[](Point& p, int64_t v) { p.shape.tokens = int(v); })},
      {"batch", int_axis(1, INT64_MAX, +[](Point& p, int64_t v) { p.shape.batch = v; })},
      {"plan", parse_plan_axis},
  };
  auto it = parsers.find(key);
  if (it == parsers.end()) throw std::logic_error(fmt::format("config: no parser for axis '{}'", key));
  return it->second;
}

// Per-case scalars first, then the axes of the table in its (expansion) order: the first axis
// varies slowest.
const std::vector<KeySpec>& key_specs() {
  static const std::vector<KeySpec> specs = [] {
    std::vector<KeySpec> out{{"name", kBitAll, {}},      {"op", kBitAll, {}},        {"variant", kBitAll, {}},
                             {"seed", kBitAll, {}},      {"threshold", kBitAll, {}}, {"verify_heads", kBitAll, {}}};
    for (const AxisDef& a : shape_axes()) out.push_back({std::string(a.key), a.ops, axis_parser(a.key)});
    return out;
  }();
  return specs;
}

const KeySpec* find_spec(const std::string& key) {
  for (const auto& s : key_specs())
    if (s.key == key) return &s;
  return nullptr;
}

std::vector<std::string> keys_for(OpKind op) {
  std::vector<std::string> out;
  for (const auto& s : key_specs())
    if (s.ops & op_bit(op)) out.push_back(s.key);
  return out;
}

const std::vector<std::string>& top_keys() {
  static const std::vector<std::string> keys{"description", "defaults", "cases"};
  return keys;
}

// Rejects unknown and repeated keys of a map.
void check_keys(const Checker& c, const ConfigNode& map, const std::string& path, const std::vector<std::string>& valid) {
  std::map<std::string, int> seen;
  for (const auto& m : map.members) {
    if (std::find(valid.begin(), valid.end(), m.key) == valid.end())
      c.fail(m.key_line, child(path, m.key), fmt::format("unknown key; valid keys: {}", join(valid)));
    auto [it, fresh] = seen.emplace(m.key, m.key_line);
    if (!fresh) c.fail(m.key_line, child(path, m.key), fmt::format("duplicate key (first given on line {})", it->second));
  }
}

// A key as seen by one case: written in the case itself or inherited from `defaults`.
struct Entry {
  const ConfigMember* member = nullptr;
  std::string path;
  bool from_defaults = false;
};

void read_case_scalar(const Checker& c, const KeySpec& spec, const Entry& e, CaseSpec& out) {
  const ConfigNode& n = e.member->value;
  if (n.is_list()) c.fail(n, e.path, "takes a single value, not a list");
  if (spec.key == "name") {
    out.name = c.text(n, e.path);
    if (out.name.empty()) c.fail(n, e.path, "must not be empty");
  } else if (spec.key == "op") {
    out.op = c.choice(n, e.path, parse_op, {OpKind::prefill, OpKind::decode, OpKind::mtp});
  } else if (spec.key == "variant") {
    out.variant_glob = c.text(n, e.path);
    if (out.variant_glob.empty()) c.fail(n, e.path, "must not be empty (\"*\" selects every variant)");
  } else if (spec.key == "seed") {
    out.seed = uint64_t(c.integer(n, e.path, 0));
  } else if (spec.key == "threshold") {
    double t = c.number(n, e.path);
    if (t <= 0) c.fail(n, e.path, "must be > 0 (a percentage)");
    out.threshold_pct = t;
  } else if (spec.key == "verify_heads") {
    out.verify_heads = int(c.integer(n, e.path, 0, INT_MAX));
  }
}

// Checks a value from `defaults` once, whichever ops end up using it.
void check_default(const Checker& c, const KeySpec& spec, const Entry& e) {
  if (spec.axis) {
    spec.axis(c, e.member->value, e.path);
  } else {
    CaseSpec scratch;
    read_case_scalar(c, spec, e, scratch);
  }
}

// ---- expansion ------------------------------------------------------------------------------------

void check_tensor_sizes(const Checker& c, const Shape& s, int line, const std::string& path) {
  for (const auto& t : op_def(s.op).tensors(s)) {
    int64_t n = 1;
    for (auto d : t.dims)
      if (__builtin_mul_overflow(n, d, &n))
        c.fail(line, path, fmt::format("tensor {} [{}] has more elements than int64 can count", t.name, join_dims(t.dims)),
               s.key());
    int64_t bytes = 0;
    if (__builtin_mul_overflow(n, int64_t(dtype_size(t.dtype)), &bytes))
      c.fail(line, path, fmt::format("tensor {} [{}] has more bytes than int64 can count", t.name, join_dims(t.dims)),
             s.key());
    if (uint64_t(bytes) > kMaxTensorBytes)
      c.fail(line, path,
             fmt::format("tensor {} [{}] needs {} bytes, more than the 2^48-byte limit", t.name, join_dims(t.dims), bytes),
             s.key());
  }
}

// Everything that needs the whole point: the pool against the batch, 64-bit sizes, and the op's
// own rules.
void finish_point(const Checker& c, Point& pt, int line, const std::string& path) {
  Shape& s = pt.shape;
  if (pt.pool_source) {
    const AxisValue& src = *pt.pool_source;
    // Rows are the batch (decode / mtp) or the sequences (prefill's pool form).
    const int64_t rows = s.num_sequences();
    const char* what = s.op == OpKind::prefill ? "sequences" : "batch";
    int64_t slots = pt.pool_slots;
    if (pt.pool_per_row && __builtin_mul_overflow(pt.pool_per_row, rows, &slots))
      c.fail(src.line, src.path, fmt::format("pool of {} x {} {} overflows int64", pt.pool_per_row, what, rows), src.shown);
    if (slots < rows)
      c.fail(src.line, src.path,
             fmt::format("pool must hold at least one slot per row ({} slots < {} {})", slots, what, rows), src.shown);
    s.pool = slots;
  }
  if (s.op == OpKind::prefill && !s.prefill_pool()) {
    // A dense prefill point (h0 / ht) has no pool: the pool axes (from defaults meant for decode,
    // say) do not apply, and are reset so its record says what ran.
    // An 8-bit format is kept: it asks for a pool, and validate refuses it naming the rule.
    const Shape plain;
    if (!quant::is_8bit(s.state_dtype)) s.state_dtype = plain.state_dtype;
    s.indices = plain.indices, s.index_dtype = plain.index_dtype;
  }
  s.checkpoint_at = spread_checkpoint_at(s.checkpoint_at, s.seqlens);  // one group serves every sequence
  int64_t rows = 0;
  if (s.op == OpKind::mtp && __builtin_mul_overflow(s.batch, int64_t(s.tokens), &rows))
    c.fail(line, path, "batch x tokens overflows int64", fmt::format("batch {}, tokens {}", s.batch, s.tokens));
  if (auto why = op_def(s.op).validate(s); !why.empty()) c.fail(line, path, why, s.key());
  check_tensor_sizes(c, s, line, path);
}

void expand(const Checker& c, CaseSpec& spec, const std::vector<NamedAxis>& axes, int line, const std::string& path,
            std::size_t& budget) {
  std::size_t count = 1;
  for (const auto& a : axes) {
    if (__builtin_mul_overflow(count, a.values.size(), &count) || count > kMaxPoints)
      c.fail(line, path, fmt::format("the case expands to more than {} points", kMaxPoints));
  }
  if (count > budget) c.fail(line, path, fmt::format("the config expands to more than {} points", kMaxPoints));
  budget -= count;

  const Shape base = op_def(spec.op).default_shape();
  std::vector<std::size_t> at(axes.size(), 0);
  for (std::size_t n = 0; n < count; ++n) {
    Point pt{base};
    for (std::size_t a = 0; a < axes.size(); ++a) {
      const AxisValue& v = axes[a].values[at[a]];
      v.apply(pt);
      if (axes[a].key == "pool") pt.pool_source = &v;
    }
    finish_point(c, pt, line, path);
    spec.shapes.push_back(std::move(pt.shape));
    for (std::size_t a = axes.size(); a-- > 0;) {  // odometer: the last axis turns fastest
      if (++at[a] < axes[a].values.size()) break;
      at[a] = 0;
    }
  }
}

void check_variant(const Checker& c, const CaseSpec& spec, const Entry* entry, int case_line, const std::string& path) {
  if (!Registry::instance().match(spec.op, spec.variant_glob).empty()) return;
  std::vector<std::string> names;
  for (const auto& v : Registry::instance().variants())
    if (v.op == spec.op && !v.test_only) names.push_back(v.name);
  std::string op(to_string(spec.op));
  std::string listing = names.empty() ? fmt::format("no {} variants are registered", op)
                                      : fmt::format("{} variants: {}", op, join(names));
  int line = entry ? entry->member->value.line : case_line;
  std::string at = entry ? entry->path : child(path, "variant");
  c.fail(line, at, fmt::format("matches no {} variant; {}", op, listing), spec.variant_glob);
}

// Every non-default plan of the case must be taken by each matched variant that declares knobs,
// and at least one matched variant must declare knobs: a typo in a knob stops the load rather
// than turning every record of the sweep into a skip. Variants without knobs skip such points.
void check_plans(const Checker& c, const CaseSpec& spec, const std::vector<NamedAxis>& axes) {
  auto axis = std::find_if(axes.begin(), axes.end(), [](const NamedAxis& a) { return a.key == "plan"; });
  if (axis == axes.end()) return;
  const auto matched = Registry::instance().match(spec.op, spec.variant_glob);
  for (const AxisValue& v : axis->values) {
    Point pt;
    v.apply(pt);
    const std::string& plan = pt.shape.plan;
    if (plan.empty()) continue;
    bool taken = false;
    for (const Variant* var : matched) {
      if (var->knobs.empty()) continue;
      taken = true;
      const std::string why = var->check_plan ? var->check_plan(plan) : check_plan_knobs(var->knobs, plan);
      if (!why.empty()) c.fail(v.line, v.path, fmt::format("{} does not take this plan: {}", var->name, why), v.shown);
    }
    if (taken) continue;
    std::vector<std::string> with_knobs;
    for (const auto& var : Registry::instance().variants())
      if (var.op == spec.op && !var.test_only && !var.knobs.empty()) with_knobs.push_back(var.name);
    c.fail(v.line, v.path,
           fmt::format("no matched variant takes a plan (variant '{}'; {} variants with knobs: {})", spec.variant_glob,
                       to_string(spec.op), with_knobs.empty() ? "none" : join(with_knobs)),
           v.shown);
  }
}

CaseSpec build_case(const Checker& c, const ConfigNode& node, std::size_t index, const std::map<std::string, Entry>& defaults,
                    std::size_t& budget) {
  const std::string path = element("cases", index);
  if (!node.is_map()) c.fail(node, path, "a case must be a map of case keys");
  check_keys(c, node, path, case_keys());

  std::map<std::string, Entry> entries = defaults;
  for (const auto& m : node.members) entries[m.key] = Entry{&m, child(path, m.key), false};

  auto op_entry = entries.find("op");
  if (op_entry == entries.end())
    c.fail(node.line, path, "missing key op (prefill, decode or mtp), in the case or in defaults");
  CaseSpec spec;
  spec.seed = kDefaultSeed;
  read_case_scalar(c, *find_spec("op"), op_entry->second, spec);
  spec.name = fmt::format("{}#{}", to_string(spec.op), index);

  std::vector<NamedAxis> axes;
  for (const auto& ks : key_specs()) {
    auto it = entries.find(ks.key);
    if (it == entries.end()) continue;
    const Entry& e = it->second;
    if (!(ks.ops & op_bit(spec.op))) {
      if (e.from_defaults) continue;  // defaults serve several ops
      c.fail(e.member->key_line, e.path,
             fmt::format("does not apply to op {}; keys for {}: {}", to_string(spec.op), to_string(spec.op),
                         join(keys_for(spec.op))));
    }
    if (ks.axis) axes.push_back({ks.key, ks.axis(c, e.member->value, e.path)});
    else read_case_scalar(c, ks, e, spec);
  }
  if (spec.op == OpKind::prefill && !entries.count("seqlens"))
    c.fail(node.line, path, "prefill needs seqlens, in the case or in defaults");
  if (spec.op == OpKind::mtp && !entries.count("tokens"))
    c.fail(node.line, path, "mtp needs tokens, in the case or in defaults");

  auto variant = entries.find("variant");
  check_variant(c, spec, variant == entries.end() ? nullptr : &variant->second, node.line, path);
  check_plans(c, spec, axes);
  expand(c, spec, axes, node.line, path, budget);
  return spec;
}

SweepConfig build_config(const ConfigNode& root, const Checker& c) {
  if (root.kind == ConfigNode::Kind::null)
    c.fail(1, "", fmt::format("the config is empty; expected a map with keys {}", join(top_keys())));
  if (!root.is_map()) c.fail(root, "", fmt::format("the top level must be a map with keys {}", join(top_keys())));
  check_keys(c, root, "", top_keys());

  const ConfigNode* cases = nullptr;
  std::map<std::string, Entry> defaults;
  for (const auto& m : root.members) {
    if (m.key == "description") {
      c.text(m.value, m.key);
    } else if (m.key == "defaults") {
      if (m.value.kind == ConfigNode::Kind::null) continue;
      if (!m.value.is_map()) c.fail(m.value, m.key, "expected a map of case keys");
      check_keys(c, m.value, m.key, case_keys());
      for (const auto& d : m.value.members) {
        Entry e{&d, child(m.key, d.key), true};
        check_default(c, *find_spec(d.key), e);
        defaults[d.key] = e;
      }
    } else if (m.key == "cases") {
      cases = &m.value;
    }
  }
  if (!cases) c.fail(root.line, "", "missing key cases (a non-empty list of cases)");
  if (!cases->is_list()) c.fail(*cases, "cases", "expected a list of cases");
  if (cases->items.empty()) c.fail(*cases, "cases", "needs at least one case");

  SweepConfig cfg;
  std::size_t budget = kMaxPoints;
  for (std::size_t i = 0; i < cases->items.size(); ++i) cfg.cases.push_back(build_case(c, cases->items[i], i, defaults, budget));
  return cfg;
}

std::string fnv1a_hex(const std::string& bytes) {
  return fmt::format("{:016x}", fnv1a(bytes));
}

}  // namespace

std::size_t SweepConfig::total_points() const {
  std::size_t n = 0;
  for (const auto& c : cases) n += c.shapes.size();
  return n;
}

const std::vector<std::string>& case_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    for (const auto& s : key_specs()) out.push_back(s.key);
    return out;
  }();
  return keys;
}

SweepConfig parse_config(const std::string& text, const std::string& name) {
  Checker checker(name);
  SweepConfig cfg = build_config(parse_config_tree(text, name), checker);
  cfg.path = name;
  cfg.hash = fnv1a_hex(text);
  return cfg;
}

SweepConfig build_config_tree(const ConfigNode& root, const std::string& name, const std::string& hash,
                              ConfigLocator locate) {
  SweepConfig cfg = build_config(root, Checker(name, std::move(locate)));
  cfg.path = name;
  cfg.hash = hash;
  return cfg;
}

SweepConfig load_config(const std::string& path) { return parse_config(read_config_file(path), path); }

}  // namespace gdn

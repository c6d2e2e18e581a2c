#include "report/report_schema.h"

#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <map>

#include "core/errors.h"
#include "report/report.h"

namespace gdn {

using nlohmann::json;

namespace {

// Thrown out of the parse callback; load_report turns it into an input_error naming the file.
[[noreturn]] void refuse(const std::string& at, const std::string& what) {
  throw input_error(at.empty() ? what : at + ": " + what);
}

std::string member(const std::string& at, const std::string& key) { return at.empty() ? key : at + "." + key; }
std::string element(const std::string& at, std::size_t i) { return fmt::format("{}[{}]", at, i); }

const char* type_name(const json& j) { return j.type_name(); }

bool is_c1(unsigned char lead, unsigned char next) { return lead == 0xC2 && next >= 0x80 && next <= 0x9F; }

// The first control character of `s` (C0 but tab and newline when `text`, DEL, C1), or npos.
std::size_t find_control(std::string_view s, bool text) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (text && (c == '\n' || c == '\t')) continue;
    if (c < 0x20 || c == 0x7F) return i;
    if (i + 1 < s.size() && is_c1(c, static_cast<unsigned char>(s[i + 1]))) return i;
  }
  return std::string_view::npos;
}

// Identity strings: short, one line, printable.
void check_name(const json& j, const std::string& at) {
  if (!j.is_string()) refuse(at, fmt::format("must be a string, not {}", type_name(j)));
  const auto& s = j.get_ref<const std::string&>();
  if (s.size() > kMaxNameBytes)
    refuse(at, fmt::format("a name of {} bytes, longer than the {}-byte limit", s.size(), kMaxNameBytes));
  if (auto i = find_control(s, false); i != std::string_view::npos)
    refuse(at, fmt::format("holds a control character (byte {} is 0x{:02x})", i, static_cast<unsigned char>(s[i])));
}

void check_number(const json& j, const std::string& at, bool nullable) {
  if (j.is_null() && nullable) return;
  if (!j.is_number()) refuse(at, fmt::format("must be a number{}, not {}", nullable ? " or null" : "", type_name(j)));
  const double v = j.get<double>();
  if (!std::isfinite(v)) refuse(at, "is not a finite number");
  if (v < 0) refuse(at, fmt::format("{} is negative", v));
}

void check_count(const json& j, const std::string& at) {
  if (j.is_number_unsigned()) return;
  if (!j.is_number_integer() || j.get<int64_t>() < 0)
    refuse(at, fmt::format("must be a non-negative integer, not {}", j.dump()));
}

void check_bool(const json& j, const std::string& at) {
  if (!j.is_boolean()) refuse(at, fmt::format("must be true or false, not {}", type_name(j)));
}

enum class Kind { name, text, number, count, boolean, object, array };

using Fields = std::map<std::string, Kind>;

void check_kind(const json& j, Kind k, const std::string& at) {
  switch (k) {
    case Kind::name: return check_name(j, at);
    case Kind::text:
      if (!j.is_string()) refuse(at, fmt::format("must be a string, not {}", type_name(j)));
      return;
    case Kind::number: return check_number(j, at, true);
    case Kind::count: return check_count(j, at);
    case Kind::boolean: return check_bool(j, at);
    case Kind::object:
      if (!j.is_object()) refuse(at, fmt::format("must be an object, not {}", type_name(j)));
      return;
    case Kind::array:
      if (!j.is_array()) refuse(at, fmt::format("must be an array, not {}", type_name(j)));
      return;
  }
}

// The listed fields, where present, are of their kind (null is "absent" for every kind but a
// name); other keys are left to newer writers.
void check_fields(const json& obj, const std::string& at, const Fields& fields) {
  if (!obj.is_object()) refuse(at, fmt::format("must be an object, not {}", type_name(obj)));
  for (const auto& [key, kind] : fields) {
    auto it = obj.find(key);
    if (it == obj.end() || (it->is_null() && kind != Kind::name)) continue;
    check_kind(*it, kind, member(at, key));
  }
}

void check_each(const json& obj, const char* key, const std::string& at, const Fields& fields) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return;
  const std::string here = member(at, key);
  check_kind(*it, Kind::array, here);
  for (std::size_t i = 0; i < it->size(); ++i) check_fields((*it)[i], element(here, i), fields);
}

// Every number of a shape is a finite non-negative count or scale (alone, in a list, or in a list
// of lists); every string a short name.
void check_shape(const json& s, const std::string& at) {
  if (!s.is_object()) refuse(at, fmt::format("must be an object, not {}", type_name(s)));
  for (auto it = s.begin(); it != s.end(); ++it) {
    const std::string here = member(at, it.key());
    const json& v = it.value();
    if (v.is_string()) check_name(v, here);
    else if (v.is_number()) check_number(v, here, false);
    else if (v.is_array())
      for (std::size_t i = 0; i < v.size(); ++i) {
        // A list of counts, or of lists of counts (checkpoint_at: positions per sequence).
        if (!v[i].is_array()) check_count(v[i], element(here, i));
        else
          for (std::size_t j = 0; j < v[i].size(); ++j) check_count(v[i][j], element(element(here, i), j));
      }
    else if (!v.is_boolean() && !v.is_null()) refuse(here, fmt::format("unexpected {}", type_name(v)));
  }
}

void check_record(const json& r, const std::string& at) {
  if (!r.is_object()) refuse(at, fmt::format("a case record must be an object, not {}", type_name(r)));
  for (const char* key : {"variant", "shape"})
    if (!r.contains(key)) refuse(at, fmt::format("has no '{}'", key));
  check_fields(r, at,
               {{"case", Kind::name}, {"op", Kind::name}, {"variant", Kind::name}, {"plan", Kind::name},
                {"mode", Kind::name}, {"device", Kind::name}, {"status", Kind::name}, {"reason", Kind::text},
                {"seed", Kind::count}, {"threshold_pct", Kind::number}, {"timed", Kind::boolean},
                {"throttled", Kind::boolean}, {"wall_s", Kind::number}, {"shape_key", Kind::text},
                {"repro", Kind::text}});
  check_shape(r["shape"], member(at, "shape"));
  if (auto v = r.find("verification"); v != r.end() && !v->is_null()) {
    const std::string here = member(at, "verification");
    check_fields(*v, here, {{"ran", Kind::boolean}, {"pass", Kind::boolean}, {"scope", Kind::text}, {"seconds", Kind::number}});
    check_each(*v, "checks", here,
               {{"tensor", Kind::name}, {"rel_l2", Kind::number}, {"max_abs", Kind::number}, {"tolerance", Kind::number},
                {"checked", Kind::count}, {"nonfinite", Kind::count}, {"unwritten", Kind::count},
                {"untouched_diff", Kind::count}, {"pass", Kind::boolean}});
  }
  if (auto t = r.find("timing"); t != r.end() && !t->is_null()) {
    const std::string here = member(at, "timing");
    check_fields(*t, here,
                 {{"timer", Kind::name}, {"converged", Kind::boolean}, {"stop_reason", Kind::name},
                  {"max_noise", Kind::number}, {"timeout_s", Kind::number}, {"wall_s", Kind::number},
                  {"sm_clock_mhz", Kind::number}, {"kernels_sum_median_s", Kind::number}});
    if (auto s = t->find("stats"); s != t->end() && !s->is_null()) {
      Fields stats{{"n", Kind::count}};
      for (const char* k : {"min", "p10", "p25", "median", "mean", "p75", "p90", "max", "stdev", "rel_stdev", "noise"})
        stats[k] = Kind::number;
      check_fields(*s, member(here, "stats"), stats);
    }
    if (auto s = t->find("samples_s"); s != t->end() && !s->is_null()) {
      check_kind(*s, Kind::array, member(here, "samples_s"));
      for (std::size_t i = 0; i < s->size(); ++i) check_number((*s)[i], element(member(here, "samples_s"), i), true);
    }
    check_each(*t, "kernels", here, {{"name", Kind::text}, {"median_s", Kind::number}, {"share", Kind::number}});
    check_each(*t, "repetitions", here,
               {{"median_s", Kind::number}, {"noise", Kind::number}, {"n", Kind::count}, {"converged", Kind::boolean}});
  }
  if (auto w = r.find("work"); w != r.end() && !w->is_null())
    check_fields(*w, member(at, "work"),
                 {{"bytes", Kind::number}, {"flops", Kind::number}, {"flops_fi", Kind::number},
                  {"bandwidth_bound", Kind::boolean}});
  if (auto m = r.find("metrics"); m != r.end() && !m->is_null())
    check_fields(*m, member(at, "metrics"),
                 {{"tflops", Kind::number}, {"tflops_fi", Kind::number}, {"tbps", Kind::number},
                  {"roofline_pct", Kind::number}, {"roofline_note", Kind::text}});
  if (auto o = r.find("origin"); o != r.end() && !o->is_null())
    check_fields(*o, member(at, "origin"), {{"kind", Kind::name}, {"path", Kind::text}, {"sha256", Kind::name}});
  if (auto p = r.find("peak"); p != r.end() && !p->is_null())
    check_fields(*p, member(at, "peak"), {{"kind", Kind::text}, {"value", Kind::number}, {"source", Kind::text}});
  if (auto d = r.find("drift"); d != r.end() && !d->is_null()) {
    const std::string here = member(at, "drift");
    check_fields(*d, here, {{"heads", Kind::count}, {"rows", Kind::count}});
    for (const char* key : {"tokens", "state_rel_l2", "o_rel_l2"}) {
      auto a = d->find(key);
      if (a == d->end()) refuse(here, fmt::format("has no '{}'", key));
      check_kind(*a, Kind::array, member(here, key));
      for (std::size_t i = 0; i < a->size(); ++i)
        if (std::string(key) == "tokens") check_count((*a)[i], element(member(here, key), i));
        else check_number((*a)[i], element(member(here, key), i), true);
    }
  }
}

// Every string and key of the document: bounded, and free text with its control characters
// escaped. Recursive: the parser already bounded the depth. A child's path is built only on the
// way down into a container or to name a refusal, so 10^5 samples cost no strings.
void bound_strings(json& j, const std::string& at) {
  if (j.is_string()) {
    auto& s = j.get_ref<std::string&>();
    if (s.size() > kMaxTextBytes)
      refuse(at, fmt::format("a string of {} bytes, longer than the {} KiB limit (it begins \"{}\")", s.size(),
                             kMaxTextBytes >> 10, escape_controls(s.substr(0, 40))));
    if (find_control(s, true) != std::string_view::npos) s = escape_controls(s);
  } else if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key().size() > kMaxNameBytes || find_control(it.key(), false) != std::string_view::npos)
        refuse(at, fmt::format("a key of {} bytes that is too long or not printable (it begins \"{}\")",
                               it.key().size(), escape_controls(it.key().substr(0, 40))));
      if (it.value().is_structured() || it.value().is_string()) bound_strings(it.value(), member(at, it.key()));
    }
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i)
      if (j[i].is_structured() || j[i].is_string()) bound_strings(j[i], element(at, i));
  }
}

}  // namespace

std::string escape_controls(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n' || c == '\t') out += char(c);
    else if (c < 0x20 || c == 0x7F) out += fmt::format("\\x{:02x}", c);
    else if (i + 1 < s.size() && is_c1(c, static_cast<unsigned char>(s[i + 1]))) out += fmt::format("\\u{:04x}", static_cast<unsigned char>(s[++i]));
    else out += char(c);
  }
  return out;
}

json parse_report_json(std::istream& in) {
  // The callback sees every value as it is parsed, with its depth: a 100k-deep object is refused
  // at depth kMaxReportDepth instead of being built (and later copied or printed by recursion).
  auto bounded = [](int depth, json::parse_event_t, json&) {
    if (depth > int(kMaxReportDepth)) refuse("", fmt::format("nesting deeper than {} levels", kMaxReportDepth));
    return true;
  };
  return json::parse(in, bounded);
}

void check_schema_version(const json& j) {
  auto v = j.find("schema_version");
  if (v == j.end() || !v->is_number_integer()) refuse("", "not a gdnbench report (no integer schema_version)");
  if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(kSchemaVersion))
    refuse("schema_version", fmt::format("{} is newer than this gdnbench reads ({}); use a newer gdnbench", v->dump(),
                                         kSchemaVersion));
  if (v->get<int64_t>() < kOldestSchemaVersion || v->get<int64_t>() > kSchemaVersion)
    refuse("schema_version", fmt::format("{} is not a version this gdnbench reads (it reads {} to {})", v->dump(),
                                         kOldestSchemaVersion, kSchemaVersion));
}

void check_report_schema(json& j) {
  if (!j.is_object()) refuse("", fmt::format("a report must be a JSON object, not {}", type_name(j)));
  check_schema_version(j);
  check_fields(j, "",
               {{"tool", Kind::object}, {"argv", Kind::array}, {"command", Kind::name}, {"config", Kind::object},
                {"mode", Kind::name}, {"started_at", Kind::text}, {"finished_at", Kind::text},
                {"complete", Kind::boolean}, {"host", Kind::object}, {"devices", Kind::array},
                {"calibration", Kind::object}, {"shard", Kind::object}});
  if (auto s = j.find("shard"); s != j.end() && s->is_object()) {
    check_fields(*s, "shard", {{"index", Kind::count}, {"count", Kind::count}});
    const auto index = s->find("index"), count = s->find("count");
    if (index == s->end() || count == s->end() || !index->is_number_unsigned() || !count->is_number_unsigned() ||
        count->get<uint64_t>() < 1 || index->get<uint64_t>() >= count->get<uint64_t>())
      refuse("shard", fmt::format("needs a count >= 1 and an index below it (got {})", s->dump()));
  }
  if (auto a = j.find("argv"); a != j.end() && a->is_array())
    for (std::size_t i = 0; i < a->size(); ++i) check_kind((*a)[i], Kind::text, element("argv", i));
  if (auto c = j.find("config"); c != j.end() && c->is_object())
    check_fields(*c, "config", {{"path", Kind::text}, {"hash", Kind::name}});
  if (auto t = j.find("tool"); t != j.end() && t->is_object())
    check_fields(*t, "tool", {{"name", Kind::name}, {"version", Kind::name}, {"git_sha", Kind::name}});
  if (auto d = j.find("devices"); d != j.end() && d->is_array())
    for (std::size_t i = 0; i < d->size(); ++i) check_kind((*d)[i], Kind::object, element("devices", i));
  auto cases = j.find("cases");
  if (cases == j.end()) refuse("", "has no 'cases' array");
  if (!cases->is_array()) refuse("cases", fmt::format("must be an array of case records, not {}", type_name(*cases)));
  for (std::size_t i = 0; i < cases->size(); ++i) check_record((*cases)[i], element("cases", i));
  // After the names were checked as they are: free text is escaped, not refused.
  bound_strings(j, "");
}

void check_unique_keys(const RunReport& r) {
  std::map<std::string, std::size_t> first;
  for (std::size_t i = 0; i < r.cases.size(); ++i) {
    const auto& c = r.cases[i];
    const std::string key = c.variant + " " + c.shape_key() + " mode=" + c.mode + " device=" + c.device;
    auto [it, fresh] = first.emplace(key, i);
    if (!fresh)
      refuse(element("cases", i), fmt::format("the same case as cases[{}] ({} {}, mode {}, device '{}'): a report "
                                              "holds each case once",
                                              it->second, c.variant, c.shape_key(), c.mode, c.device));
  }
}

void check_resumable(const RunReport& old, const std::string& path, const std::string& config_path,
                     const std::string& config_hash, const std::string& mode) {
  auto fail = [&](const std::string& why) {
    throw input_error(fmt::format("--resume '{}': {}; resume a report of this same run, or start a new one", path, why));
  };
  if (old.command != "run") fail(fmt::format("it is a '{}' report, not one of 'run'", old.command));
  if (old.config_hash != config_hash || old.config_path != config_path)
    fail(fmt::format("it is of the config '{}' (hash {}), not of '{}' (hash {})", old.config_path, old.config_hash,
                     config_path, config_hash));
  if (old.mode != mode) fail(fmt::format("it was timed in mode {}, this run times in mode {}", old.mode, mode));
  for (std::size_t i = 0; i < old.cases.size(); ++i)
    if (old.cases[i].mode != mode)
      fail(fmt::format("cases[{}] was timed in mode {}, this run times in mode {}", i, old.cases[i].mode, mode));
}

}  // namespace gdn

// The durable JSON form of a run (docs/report-schema.md): real numbers, non-finite as null,
// enums by name, one schema_version for the whole file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fmt/format.h>
#include <istream>
#include <optional>

#include "core/axes.h"
#include "core/errors.h"
#include "core/bounded_file.h"
#include "core/json_fields.h"
#include "report/report.h"
#include "report/report_schema.h"

namespace gdn {

using nlohmann::json;

namespace {

constexpr const char* kToolName = "gdnbench";

// ---- leaves -----------------------------------------------------------------------------

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// Timer resolution is 1 ns at best; rounding keeps 100k-sample arrays short in the file.
json sample_num(double v) { return std::isfinite(v) ? json(std::round(v * 1e9) / 1e9) : json(nullptr); }

std::optional<CaseStatus> parse_case_status(std::string_view s) {
  for (auto c : {CaseStatus::ok, CaseStatus::skipped, CaseStatus::verify_failed, CaseStatus::error})
    if (to_string(c) == s) return c;
  return std::nullopt;
}

// ---- pieces of a record ----------------------------------------------------------------

json to_json(const Stats& s) {
  return {{"n", s.n},         {"min", num(s.min)},     {"p10", num(s.p10)},     {"p25", num(s.p25)},
          {"median", num(s.median)}, {"mean", num(s.mean)}, {"p75", num(s.p75)}, {"p90", num(s.p90)},
          {"max", num(s.max)},   {"stdev", num(s.stdev)}, {"rel_stdev", num(s.rel_stdev)}, {"noise", num(s.noise)}};
}

Stats stats_from_json(const json& j) {
  Stats s;
  read(j, "n", s.n);
  read(j, "min", s.min), read(j, "p10", s.p10), read(j, "p25", s.p25), read(j, "median", s.median);
  read(j, "mean", s.mean), read(j, "p75", s.p75), read(j, "p90", s.p90), read(j, "max", s.max);
  read(j, "stdev", s.stdev), read(j, "rel_stdev", s.rel_stdev), read(j, "noise", s.noise);
  return s;
}

json to_json(const TensorCheck& c) {
  return {{"tensor", c.tensor},       {"rel_l2", num(c.rel_l2)},   {"max_abs", num(c.max_abs)},
          {"tolerance", num(c.tolerance)}, {"checked", c.checked}, {"nonfinite", c.nonfinite},
          {"unwritten", c.unwritten}, {"untouched_diff", c.untouched_diff}, {"pass", c.pass}};
}

TensorCheck check_from_json(const json& j) {
  TensorCheck c;
  read(j, "tensor", c.tensor);
  read(j, "rel_l2", c.rel_l2), read(j, "max_abs", c.max_abs), read(j, "tolerance", c.tolerance);
  read(j, "checked", c.checked), read(j, "nonfinite", c.nonfinite), read(j, "unwritten", c.unwritten);
  read(j, "untouched_diff", c.untouched_diff), read(j, "pass", c.pass);
  return c;
}

json to_json(const Verification& v) {
  json checks = json::array();
  for (const auto& c : v.checks) checks.push_back(to_json(c));
  return {{"ran", v.ran}, {"pass", v.pass}, {"scope", v.scope}, {"seconds", num(v.seconds)}, {"checks", checks}};
}

Verification verification_from_json(const json& j) {
  Verification v;
  read(j, "ran", v.ran), read(j, "pass", v.pass), read(j, "scope", v.scope), read(j, "seconds", v.seconds);
  if (auto it = j.find("checks"); it != j.end() && it->is_array())
    for (const auto& c : *it) v.checks.push_back(check_from_json(c));
  return v;
}

json timing_to_json(const CaseRecord& r) {
  const auto& m = r.timing;
  json samples = json::array();
  for (double s : m.samples_s) samples.push_back(sample_num(s));
  json kernels = json::array();
  for (const auto& k : m.kernels) kernels.push_back({{"name", k.name}, {"median_s", num(k.median_s)}, {"share", num(k.share)}});
  json out = {{"timer", r.timer},     {"stats", to_json(m.stats)},     {"samples_s", samples},
              {"converged", m.converged}, {"stop_reason", m.stop_reason}, {"max_noise", num(m.max_noise)},
              {"timeout_s", num(m.timeout_s)}, {"wall_s", num(m.wall_s)},
              {"kernels", kernels},   {"sm_clock_mhz", num(m.sm_clock_mhz)}};
  if (std::isfinite(m.kernels_sum_median_s)) out["kernels_sum_median_s"] = num(m.kernels_sum_median_s);
  if (!m.repetitions.empty()) {  // schema 2: run --repetitions N > 1
    json reps = json::array();
    for (const auto& rep : m.repetitions)
      reps.push_back({{"median_s", num(rep.median_s)}, {"noise", num(rep.noise)}, {"n", rep.n}, {"converged", rep.converged}});
    out["repetitions"] = reps;
  }
  return out;
}

void timing_from_json(const json& j, CaseRecord& r) {
  auto& m = r.timing;
  read(j, "timer", r.timer);
  if (auto it = j.find("stats"); it != j.end() && it->is_object()) m.stats = stats_from_json(*it);
  if (auto it = j.find("samples_s"); it != j.end() && it->is_array())
    for (const auto& s : *it) m.samples_s.push_back(s.is_null() ? kNaN : s.get<double>());
  read(j, "converged", m.converged), read(j, "stop_reason", m.stop_reason), read(j, "wall_s", m.wall_s);
  read(j, "max_noise", m.max_noise), read(j, "timeout_s", m.timeout_s);
  if (auto it = j.find("kernels"); it != j.end() && it->is_array())
    for (const auto& k : *it) {
      KernelStat ks;
      read(k, "name", ks.name), read(k, "median_s", ks.median_s), read(k, "share", ks.share);
      m.kernels.push_back(std::move(ks));
    }
  read(j, "sm_clock_mhz", m.sm_clock_mhz);
  if (auto it = j.find("kernels_sum_median_s"); it != j.end() && it->is_number()) m.kernels_sum_median_s = it->get<double>();
  if (auto it = j.find("repetitions"); it != j.end() && it->is_array())
    for (const auto& rj : *it) {
      RepetitionStat rep;
      read(rj, "median_s", rep.median_s), read(rj, "noise", rep.noise), read(rj, "n", rep.n);
      read(rj, "converged", rep.converged);
      m.repetitions.push_back(rep);
    }
}

json to_json(const HostInfo& h) {
  return {{"hostname", h.hostname},         {"cpu_model", h.cpu_model}, {"logical_cores", h.logical_cores},
          {"memory_bytes", h.memory_bytes}, {"llc_bytes", h.llc_bytes}, {"cache_bytes", h.cache_bytes}, {"os", h.os}};
}

HostInfo host_from_json(const json& j) {
  HostInfo h;
  read(j, "hostname", h.hostname), read(j, "cpu_model", h.cpu_model), read(j, "logical_cores", h.logical_cores);
  read(j, "memory_bytes", h.memory_bytes), read(j, "llc_bytes", h.llc_bytes), read(j, "cache_bytes", h.cache_bytes),
      read(j, "os", h.os);
  return h;
}

json to_json(const DeviceInfo& d) {
  return {{"index", d.index},
          {"name", d.name},
          {"uuid", d.uuid},
          {"cc_major", d.cc_major},
          {"cc_minor", d.cc_minor},
          {"arch", d.arch()},
          {"sm_count", d.sm_count},
          {"l2_bytes", d.l2_bytes},
          {"memory_bytes", d.memory_bytes},
          {"memory_free_bytes", d.memory_free_bytes},
          {"sm_clock_max_mhz", d.sm_clock_max_mhz},
          {"mem_clock_mhz", d.mem_clock_mhz},
          {"mem_bus_width", d.mem_bus_width},
          {"driver_version", d.driver_version},
          {"runtime_version", d.runtime_version},
          {"cupti_version", d.cupti_version}};
}

DeviceInfo device_from_json(const json& j) {
  DeviceInfo d;
  read(j, "index", d.index), read(j, "name", d.name), read(j, "uuid", d.uuid);
  read(j, "cc_major", d.cc_major), read(j, "cc_minor", d.cc_minor), read(j, "sm_count", d.sm_count);
  read(j, "l2_bytes", d.l2_bytes), read(j, "memory_bytes", d.memory_bytes);
  read(j, "memory_free_bytes", d.memory_free_bytes), read(j, "sm_clock_max_mhz", d.sm_clock_max_mhz);
  read(j, "mem_clock_mhz", d.mem_clock_mhz), read(j, "mem_bus_width", d.mem_bus_width);
  read(j, "driver_version", d.driver_version), read(j, "runtime_version", d.runtime_version);
  read(j, "cupti_version", d.cupti_version);
  return d;
}

// ---- text ------------------------------------------------------------------------------

std::string leaf(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Indented like dump(2), except that arrays of scalars stay on one line: a sample array of 10^5
// numbers is one long line instead of 10^5 short ones.
void dump_pretty(const json& j, int depth, std::string& out) {
  const std::string pad(2 * std::size_t(depth + 1), ' ');
  if (j.is_object() && !j.empty()) {
    out += "{\n";
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) out += ",\n";
      first = false;
      out += pad + leaf(json(it.key())) + ": ";
      dump_pretty(it.value(), depth + 1, out);
    }
    out += "\n" + std::string(2 * std::size_t(depth), ' ') + "}";
  } else if (j.is_array() && !j.empty()) {
    bool flat = true;
    for (const auto& e : j) flat = flat && !e.is_structured();
    if (flat) {
      out += "[";
      for (std::size_t i = 0; i < j.size(); ++i) out += (i ? ", " : "") + leaf(j[i]);
      out += "]";
      return;
    }
    out += "[\n";
    for (std::size_t i = 0; i < j.size(); ++i) {
      out += (i ? ",\n" : "") + pad;
      dump_pretty(j[i], depth + 1, out);
    }
    out += "\n" + std::string(2 * std::size_t(depth), ' ') + "]";
  } else {
    out += leaf(j);
  }
}

}  // namespace

// ---- Shape -------------------------------------------------------------------------------

json to_json(const Shape& s) { return shape_to_json(s); }

Shape shape_from_json(const json& j) { return shape_from_json_object(j); }

// ---- StateDrift (8-bit pools) ---------------------------------------------------------------

json nums(const std::vector<double>& xs) {
  json a = json::array();
  for (double x : xs) a.push_back(num(x));
  return a;
}

StateDrift drift_from_json(const json& j) {
  StateDrift d;
  read(j, "heads", d.heads), read(j, "rows", d.rows);
  auto list = [&](const char* key, auto& out) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_array()) throw input_error(fmt::format("drift.{} must be an array", key));
    for (const auto& x : *it) {
      if (!x.is_number() && !x.is_null()) throw input_error(fmt::format("drift.{} holds a non-number", key));
      out.push_back(x.is_null() ? kNaN : x.get<double>());
    }
  };
  std::vector<double> tokens;
  list("tokens", tokens), list("state_rel_l2", d.state_rel_l2), list("o_rel_l2", d.o_rel_l2);
  for (double t : tokens) {
    if (!(t >= 1 && t <= 1e15)) throw input_error(fmt::format("drift.tokens holds {}, not a run length", t));
    d.tokens.push_back(int64_t(t));
  }
  if (d.state_rel_l2.size() != d.tokens.size() || d.o_rel_l2.size() != d.tokens.size())
    throw input_error("drift: tokens, state_rel_l2 and o_rel_l2 must have one entry per length");
  return d;
}

// ---- CaseRecord --------------------------------------------------------------------------

json to_json(const CaseRecord& r) {
  const bool has_timing = r.timed || !r.timing.samples_s.empty();
  json j = {{"case", r.case_name},
            {"op", r.op()},
            {"variant", r.variant},
            {"plan", r.plan},
            {"shape", to_json(r.shape)},
            {"shape_key", r.shape_key()},
            {"mode", r.mode},
            {"device", r.device},
            {"seed", r.seed},
            {"threshold_pct", r.threshold_pct ? num(*r.threshold_pct) : json(nullptr)},
            {"status", to_string(r.status)},
            {"reason", r.reason},
            {"verification", to_json(r.verify)},
            {"timed", r.timed},
            {"timing", has_timing ? timing_to_json(r) : json(nullptr)},
            {"work",
             {{"bytes", num(r.work.bytes)},
              {"flops", num(r.work.flops)},
              {"flops_fi", num(r.work.flops_fi)},
              {"bandwidth_bound", r.work.bandwidth_bound}}},
            {"metrics",
             {{"tflops", num(r.tflops)},
              {"tflops_fi", num(r.tflops_fi)},
              {"tbps", num(r.tbps)},
              {"roofline_pct", num(r.roofline_pct)},
              {"roofline_note", r.roofline_note}}},
            {"peak", {{"kind", r.peak.kind}, {"value", num(r.peak.value)}, {"source", r.peak.source}}},
            {"throttled", r.throttled},
            {"wall_s", num(r.wall_s)}};
  j["repro"] = r.repro;
  if (!r.drift.empty())  // 8-bit pools only: other records stay as they were
    j["drift"] = {{"heads", r.drift.heads},
                  {"rows", r.drift.rows},
                  {"tokens", r.drift.tokens},
                  {"state_rel_l2", nums(r.drift.state_rel_l2)},
                  {"o_rel_l2", nums(r.drift.o_rel_l2)}};
  // A variant loaded at run time says where from; a built-in one writes nothing.
  if (r.origin.external())
    j["origin"] = {{"kind", r.origin.kind}, {"path", r.origin.path}, {"sha256", r.origin.sha256}};
  return j;
}

CaseRecord record_from_json(const json& j) {
  if (!j.is_object()) throw input_error("case record must be an object");
  CaseRecord r;
  read(j, "case", r.case_name);
  read(j, "variant", r.variant);
  read(j, "plan", r.plan);
  if (auto it = j.find("shape"); it != j.end()) r.shape = shape_from_json(*it);
  read(j, "mode", r.mode), read(j, "device", r.device), read(j, "seed", r.seed);
  if (auto it = j.find("threshold_pct"); it != j.end() && it->is_number()) r.threshold_pct = it->get<double>();
  read_enum(j, "status", r.status, parse_case_status);
  read(j, "reason", r.reason);
  if (auto it = j.find("verification"); it != j.end() && it->is_object()) r.verify = verification_from_json(*it);
  read(j, "timed", r.timed);
  if (auto it = j.find("timing"); it != j.end() && it->is_object()) timing_from_json(*it, r);
  if (auto it = j.find("work"); it != j.end() && it->is_object()) {
    read(*it, "bytes", r.work.bytes), read(*it, "flops", r.work.flops), read(*it, "flops_fi", r.work.flops_fi);
    read(*it, "bandwidth_bound", r.work.bandwidth_bound);
  }
  if (auto it = j.find("metrics"); it != j.end() && it->is_object()) {
    read(*it, "tflops", r.tflops), read(*it, "tflops_fi", r.tflops_fi), read(*it, "tbps", r.tbps);
    read(*it, "roofline_pct", r.roofline_pct), read(*it, "roofline_note", r.roofline_note);
  }
  if (auto it = j.find("peak"); it != j.end() && it->is_object())
    read(*it, "kind", r.peak.kind), read(*it, "value", r.peak.value), read(*it, "source", r.peak.source);
  read(j, "throttled", r.throttled), read(j, "wall_s", r.wall_s);
  if (auto it = j.find("origin"); it != j.end() && it->is_object())
    read(*it, "kind", r.origin.kind), read(*it, "path", r.origin.path), read(*it, "sha256", r.origin.sha256);
  read(j, "repro", r.repro);  // absent in reports written before it existed
  if (auto it = j.find("drift"); it != j.end() && it->is_object()) r.drift = drift_from_json(*it);
  return r;
}

// ---- RunReport ---------------------------------------------------------------------------

json to_json(const RunReport& r) {
  json devices = json::array();
  for (const auto& d : r.devices) devices.push_back(to_json(d));
  json cases = json::array();
  for (const auto& c : r.cases) cases.push_back(to_json(c));
  json out = {{"schema_version", kSchemaVersion},
             {"tool", {{"name", kToolName}, {"version", r.tool_version}, {"git_sha", r.git_sha}}},
             {"argv", r.argv},
             {"command", r.command},
             {"config", {{"path", r.config_path}, {"hash", r.config_hash}}},
             {"mode", r.mode},
             {"started_at", r.started_at},
             {"finished_at", r.finished_at},
             {"complete", r.complete},
             {"host", to_json(r.host)},
             {"devices", devices},
             {"calibration", r.calibration},
             {"cases", cases}};
  if (r.shard_count > 0) out["shard"] = {{"index", r.shard_index}, {"count", r.shard_count}};
  return out;
}

RunReport report_from_json(const json& j) {
  if (!j.is_object()) throw input_error("a report must be a JSON object");
  check_schema_version(j);
  RunReport r;
  if (auto it = j.find("tool"); it != j.end() && it->is_object())
    read(*it, "version", r.tool_version), read(*it, "git_sha", r.git_sha);
  read(j, "argv", r.argv), read(j, "command", r.command);
  if (auto it = j.find("config"); it != j.end() && it->is_object())
    read(*it, "path", r.config_path), read(*it, "hash", r.config_hash);
  read(j, "mode", r.mode), read(j, "started_at", r.started_at), read(j, "finished_at", r.finished_at);
  read(j, "complete", r.complete);
  if (auto it = j.find("shard"); it != j.end() && it->is_object())
    read(*it, "index", r.shard_index), read(*it, "count", r.shard_count);
  if (auto it = j.find("host"); it != j.end() && it->is_object()) r.host = host_from_json(*it);
  if (auto it = j.find("devices"); it != j.end() && it->is_array())
    for (const auto& d : *it) r.devices.push_back(device_from_json(d));
  if (auto it = j.find("calibration"); it != j.end() && !it->is_null()) r.calibration = *it;
  auto cases = j.find("cases");
  if (cases == j.end() || !cases->is_array()) throw input_error("'cases' must be an array of case records");
  for (std::size_t i = 0; i < cases->size(); ++i) {
    try {
      r.cases.push_back(record_from_json((*cases)[i]));
    } catch (const Error& e) {
      throw input_error("cases[" + std::to_string(i) + "]: " + e.what());
    } catch (const json::exception& e) {
      throw input_error("cases[" + std::to_string(i) + "]: " + e.what());
    }
  }
  return r;
}

// ---- files -------------------------------------------------------------------------------

RunReport read_report(std::istream& in, const std::string& path, const std::function<bool()>& over_limit) {
  json j;
  try {
    j = parse_report_json(in);
  } catch (const json::parse_error& e) {
    if (over_limit && over_limit())
      throw input_error(fmt::format("report '{}' is longer than the {} MiB limit", path, kMaxReportBytes >> 20));
    throw input_error("report '" + path + "' is not valid JSON: " + e.what());
  } catch (const json::out_of_range& e) {  // 1e400: no double holds it, and no time is that long
    throw input_error("report '" + path + "' holds a number too large for a double: " + e.what());
  } catch (const Error& e) {
    throw input_error("report '" + path + "': " + e.what());
  }
  try {
    check_report_schema(j);
    RunReport r = report_from_json(j);
    check_unique_keys(r);
    return r;
  } catch (const Error& e) {
    throw input_error("report '" + path + "': " + e.what());
  } catch (const json::exception& e) {
    throw input_error("report '" + path + "' is malformed: " + e.what());
  }
}

RunReport load_report(const std::string& path) {
  // A regular file of at most kMaxReportBytes, parsed as it is read, so /dev/zero, a FIFO or a
  // gigabyte of junk is refused at once; then the schema, before any field is believed.
  BoundedFileBuf file(path, "report", kMaxReportBytes);
  std::istream in(&file);
  return read_report(in, path, [&] { return file.over_limit(); });
}

void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  auto fail = [&](const std::string& what) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw runtime_error("cannot write '" + path + "' (" + what + "): " + why);
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("create " + tmp);
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      fail("write");
    }
    done += std::size_t(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail("fsync");
  }
  if (::close(fd) != 0) fail("close");
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename");
  // Make the rename itself durable; best effort (some filesystems refuse fsync on directories).
  auto dir = std::filesystem::path(path).parent_path();
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_report(const std::string& path, const RunReport& r) {
  std::string text;
  dump_pretty(to_json(r), 0, text);
  text += "\n";
  write_file_atomic(path, text);
}

}  // namespace gdn

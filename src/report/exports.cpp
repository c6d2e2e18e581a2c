// Flat and dashboard views of a run: CSV, Google-Benchmark JSON, github-action-benchmark
// customBiggerIsBetter. Only the JSON report is durable; these are derived from it.
#include <fmt/format.h>

#include <cmath>

#include "report/report.h"
#include "report/text_table.h"
#include "timing/repetitions.h"

namespace gdn {

using nlohmann::json;

namespace {

// RFC 4180: quote a field holding a separator, quote or line break; double inner quotes.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string csv_num(double v) { return std::isfinite(v) ? fmt::format("{:.9g}", v) : ""; }

double worst_rel_l2(const Verification& v) {
  double worst = kNaN;
  for (const auto& c : v.checks)
    if (std::isfinite(c.rel_l2) && !(c.rel_l2 <= worst)) worst = c.rel_l2;
  return worst;
}

bool exportable(const CaseRecord& r) {
  return r.status == CaseStatus::ok && r.timed && std::isfinite(r.timing.stats.median);
}

// "<variant>/<shape>/<mode>@<device>": the device keeps one series per GPU (or host CPU) model in
// dashboards that key on the name (github-action-benchmark), so H100 and H200 never share a line.
std::string bench_name(const CaseRecord& r, const std::string& fallback_mode) {
  std::string name = r.variant + "/" + r.shape_key() + "/" + (r.mode.empty() ? fallback_mode : r.mode);
  return r.device.empty() ? name : name + "@" + r.device;
}

}  // namespace

std::string format_csv(const std::vector<CaseRecord>& cases) {
  static const char* kHeader =
      "case,op,variant,shape_key,mode,device,seed,status,reason,timer,samples,median_s,min_s,mean_s,p10_s,p90_s,"
      "stdev_s,noise,converged,stop_reason,tflops,tflops_fi,tbps,roofline_pct,bytes,flops,verify_ran,verify_pass,"
      "worst_rel_l2\n";
  std::string out = kHeader;
  for (const auto& r : cases) {
    const auto& st = r.timing.stats;
    const bool t = r.timed;
    std::vector<std::string> f{
        csv_field(r.case_name),
        r.op(),
        csv_field(r.variant),
        csv_field(r.shape_key()),
        csv_field(r.mode),
        csv_field(r.device),
        std::to_string(r.seed),
        std::string(to_string(r.status)),
        csv_field(r.reason),
        csv_field(r.timer),
        t ? std::to_string(st.n) : "",
        t ? csv_num(st.median) : "",
        t ? csv_num(st.min) : "",
        t ? csv_num(st.mean) : "",
        t ? csv_num(st.p10) : "",
        t ? csv_num(st.p90) : "",
        t ? csv_num(st.stdev) : "",
        t ? csv_num(st.noise) : "",
        t ? (r.timing.converged ? "true" : "false") : "",
        t ? csv_field(r.timing.stop_reason) : "",
        csv_num(r.tflops),
        csv_num(r.tflops_fi),
        csv_num(r.tbps),
        csv_num(r.roofline_pct),
        csv_num(r.work.bytes),
        csv_num(r.work.flops),
        r.verify.ran ? "true" : "false",
        r.verify.ran ? (r.verify.pass ? "true" : "false") : "",
        csv_num(worst_rel_l2(r.verify)),
    };
    for (std::size_t i = 0; i < f.size(); ++i) out += (i ? "," : "") + f[i];
    out += "\n";
  }
  return out;
}

json to_gbench(const RunReport& r) {
  json context = {{"date", r.started_at},
                  {"host_name", r.host.hostname},
                  {"executable", "gdnbench"},
                  {"num_cpus", r.host.logical_cores},
                  {"library_version", r.tool_version},
                  {"library_build_type", "release"},
                  {"json_schema_version", 1},
                  {"gdnbench_schema_version", kSchemaVersion},
                  {"gdnbench_git_sha", r.git_sha},
                  {"gdnbench_command", r.command},
                  {"gdnbench_mode", r.mode},
                  {"gdnbench_config_hash", r.config_hash},
                  {"cpu_model", r.host.cpu_model}};
  if (!r.devices.empty()) context["gdnbench_device"] = r.devices.front().name;

  json benchmarks = json::array();
  for (const auto& c : r.cases) {
    if (!exportable(c)) continue;
    const std::string name = bench_name(c, r.mode);
    json b = {{"name", name},
              {"run_name", name},
              {"run_type", "iteration"},
              {"repetitions", repetition_count(c.timing)},
              {"repetition_index", 0},
              {"threads", 1},
              {"iterations", c.timing.stats.n},
              {"real_time", c.timing.stats.median * 1e6},
              {"cpu_time", c.timing.stats.median * 1e6},
              {"time_unit", "us"},
              {"label", c.device}};
    // Counters are top-level keys; a counter that is not a number is left out (consumers
    // expect numbers, and Google Benchmark itself never writes null).
    if (std::isfinite(c.tflops)) b["TFLOPS"] = c.tflops;
    if (std::isfinite(c.tbps)) b["TBps"] = c.tbps;
    if (std::isfinite(c.roofline_pct)) b["roofline_pct"] = c.roofline_pct;
    benchmarks.push_back(std::move(b));
  }
  return {{"context", context}, {"benchmarks", benchmarks}};
}

json to_bigger_is_better(const RunReport& r) {
  json out = json::array();
  for (const auto& c : r.cases) {
    if (!exportable(c)) continue;
    const bool bw = c.work.bandwidth_bound;
    const double value = bw ? c.tbps : c.tflops;
    if (!std::isfinite(value)) continue;
    std::string extra = fmt::format("median {}; noise {}; samples {}; device {}", format_seconds(c.timing.stats.median),
                                    std::isfinite(c.timing.stats.noise) ? fmt::format("{:.2f}%", c.timing.stats.noise * 100)
                                                                        : std::string("n/a"),
                                    c.timing.stats.n, c.device);
    if (std::isfinite(c.roofline_pct)) extra += fmt::format("; roofline {:.1f}%", c.roofline_pct);
    out.push_back({{"name", bench_name(c, r.mode)}, {"unit", bw ? "TB/s" : "TFLOPS"}, {"value", value}, {"extra", extra}});
  }
  return out;
}

}  // namespace gdn

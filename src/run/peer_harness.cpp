#include "run/peer_harness.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <map>

#include "core/op.h"
#include "report/report.h"
#include "run/tee_process.h"

namespace gdn {
namespace {

namespace fs = std::filesystem;

std::string identity_of(const nlohmann::json& point) {
  return point_identity(point.at("case").get<std::string>(), point.at("shape_key").get<std::string>(),
                        point.at("seed").get<uint64_t>());
}

// The last non-empty line of a program's output, for a one-line reason.
std::string last_line(const std::string& text) {
  std::size_t end = text.find_last_not_of(" \n\r\t");
  if (end == std::string::npos) return "";
  const std::size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1, end + 1 - (start == std::string::npos ? 0 : start + 1));
}

// Lines joined by " | ": a reason is one line in tables and logs.
std::string one_line(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '\n' ? std::string(" | ") : std::string(1, c);
  return out;
}

// One record per point of the plan, all with the same status and reason.
std::vector<CaseRecord> records_for_all(const PeerHarness& h, const nlohmann::json& plan, CaseStatus status,
                                        const std::string& reason) {
  std::vector<CaseRecord> out;
  for (const auto& p : plan.at("points")) {
    out.push_back(record_for_point(p, h.fallback_variant, plan.at("mode").get<std::string>()));
    out.back().status = status;
    out.back().reason = reason;
  }
  return out;
}

// The harness's own records: statistics recomputed from the samples, the work model gdnbench's.
void adopt(CaseRecord& r) {
  r.work = op_def(r.shape.op).work(r.shape);
  if (!r.timing.samples_s.empty()) r.timing.stats = compute_stats(r.timing.samples_s);
  compute_metrics(r);
}

}  // namespace

std::string harness_import_problem(const PeerHarness& h, const std::string& python) {
  std::vector<std::string> argv{python, h.script, "--check-import"};
  argv.insert(argv.end(), h.extra_args.begin(), h.extra_args.end());
  const TeeResult r = run_tee(argv, false, true);
  if (r.spawn_error == ENOENT)
    return fmt::format("the Python interpreter '{}' was not found (give one with --python PATH)", python);
  if (r.ok()) return "";
  const std::string why = last_line(r.tail);
  return fmt::format("{} is not importable here: {}", h.label, why.empty() ? "its --check-import " + r.how_it_ended() : why);
}

std::string point_identity(const std::string& case_name, const std::string& shape_key, uint64_t seed) {
  return fmt::format("{}|{}|{}", case_name, shape_key, seed);
}

CaseRecord record_for_point(const nlohmann::json& point, const std::string& variant, const std::string& mode) {
  CaseRecord r;
  r.case_name = point.at("case").get<std::string>();
  r.variant = variant;
  r.shape = shape_from_json(point.at("shape"));
  r.mode = mode;
  r.seed = point.at("seed").get<uint64_t>();
  r.work = op_def(r.shape.op).work(r.shape);
  return r;
}

std::vector<CaseRecord> run_peer_harness(const PeerHarness& h, const nlohmann::json& plan, const HarnessRunOptions& opt) {
  if (plan.at("points").empty()) return {};
  if (auto why = harness_import_problem(h, opt.python); !why.empty()) {
    fmt::print(stderr, "gdnbench: {}: every point is a skip ({})\n", h.label, why);
    return records_for_all(h, plan, CaseStatus::skipped, why);
  }
  const std::string stem = fmt::format("{}/{}", opt.work_dir, fs::path(h.script).stem().string());
  const std::string plan_path = stem + ".plan.json", out_path = stem + ".report.json";
  write_file_atomic(plan_path, plan.dump(1) + "\n");
  const bool resume = opt.resume && fs::exists(out_path);
  if (!resume) fs::remove(out_path);
  std::vector<std::string> argv{opt.python, h.script, "--plan", plan_path, "--out", out_path,
                                "--device", std::to_string(opt.device)};
  if (resume) argv.push_back("--resume");
  if (!opt.verify) argv.push_back("--no-verify");
  argv.insert(argv.end(), h.extra_args.begin(), h.extra_args.end());
  fmt::print(stderr, "gdnbench: running {} over {} points ({})\n", h.label, plan.at("points").size(), h.script);
  const TeeResult run = run_tee(argv, true, false);

  std::vector<CaseRecord> out;
  bool complete = false;
  std::string unreadable;
  if (fs::exists(out_path)) {
    try {
      RunReport rep = load_report(out_path);
      complete = rep.complete;
      out = std::move(rep.cases);
    } catch (const std::exception& e) {
      unreadable = e.what();
    }
  }
  for (auto& r : out) adopt(r);
  if (run.ok() && complete) return out;

  // Every point after the last one the harness wrote a record for is an error with its last words.
  std::map<std::string, std::size_t> index;
  const auto& points = plan.at("points");
  for (std::size_t i = 0; i < points.size(); ++i) index.emplace(identity_of(points[i]), i);
  std::size_t next = 0;
  for (const auto& r : out)
    if (auto it = index.find(point_identity(r.case_name, r.shape_key(), r.seed)); it != index.end())
      next = std::max(next, it->second + 1);
  std::string reason = fmt::format("the {} harness {} before this point", h.label,
                                   run.ok() ? "left its report incomplete" : run.how_it_ended());
  if (!unreadable.empty()) reason += fmt::format("; its report is unreadable ({})", unreadable);
  else if (!fs::exists(out_path)) reason += "; it wrote no report";
  if (!run.tail.empty()) reason += fmt::format("; its last lines: {}", one_line(run.tail));
  fmt::print(stderr, "gdnbench: {} {}: {} points left without its records are errors\n", h.label,
             run.ok() ? "left its report incomplete" : run.how_it_ended(), points.size() - next);
  for (std::size_t i = next; i < points.size(); ++i) {
    out.push_back(record_for_point(points[i], h.fallback_variant, plan.at("mode").get<std::string>()));
    out.back().status = CaseStatus::error;
    out.back().reason = reason;
  }
  return out;
}

}  // namespace gdn

#include "cli/peer_runs.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/errors.h"
#include "report/harness_origin.h"
#include "run/runner.h"

namespace gdn::cli {
namespace {

namespace fs = std::filesystem;

// The peers gdnbench knows: each one's harness is scripts/peers/<name>_peer.py.
const std::vector<std::string> kKnownPeers{"fla", "flashinfer", "flashqla"};
constexpr const char* kKernelHarness = "kernel_peer.py";

// Where the harnesses are looked for when --peers-dir is not given: beside the program
// (build/gdnbench, or an installed bin/gdnbench, next to scripts/peers), then the current folder's
// scripts/peers (a packed binary run from the repository root, as scripts/bench-gpu.sh does).
std::vector<std::string> default_peers_dirs() {
  std::vector<std::string> out;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) out.push_back((exe.parent_path().parent_path() / "scripts" / "peers").string());
  out.push_back("scripts/peers");
  return out;
}

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// The first folder that holds FILE; a named --peers-dir is the only place looked.
std::string script_in(const std::vector<std::string>& dirs, const std::string& file, bool dir_given) {
  for (const auto& dir : dirs) {
    const fs::path p = fs::absolute(fs::path(dir) / file);
    if (fs::is_regular_file(p)) return p.string();
  }
  std::vector<std::string> looked;
  for (const auto& dir : dirs) looked.push_back(fs::absolute(dir).string());
  throw input_error(fmt::format("{}: no harness '{}' in '{}'{}", file, file, fmt::join(looked, "', '"),
                                dir_given ? "" : " (beside this program, then the current folder); give its folder with --peers-dir DIR"));
}

}  // namespace

void add_peer_run_options(CLI::App* cmd, PeerRunArgs& a) {
  cmd->add_option("--peers", a.peers,
                  fmt::format("Also run these peers' Python harnesses on the same points and inputs, into the same "
                              "report: a comma-separated list of {}, each as NAME or NAME:VARIANT+VARIANT for only "
                              "those variants, e.g. fla:chunk (scripts/peers/README.md)",
                              fmt::join(kKnownPeers, ", ")))
      ->default_str("");
  cmd->add_option("--kernel", a.kernels,
                  "A PyTorch-style function as MODULE:FUNCTION (repeatable): verified and timed by the peers' Python "
                  "harness (scripts/peers/kernel_peer.py) beside our variants")
      ->allow_extra_args(false)
      ->default_str("");
  cmd->add_option("--peers-dir", a.peers_dir, "Folder of the peer harnesses (default: scripts/peers beside the program, else in the current folder)")
      ->default_str("");
  cmd->add_option("--python", a.python, "Python interpreter that runs the peer harnesses");
}

std::vector<PeerHarness> resolve_harnesses(const PeerRunArgs& a) {
  std::vector<PeerHarness> out;
  if (!a.any()) return out;
  const bool dir_given = !a.peers_dir.empty();
  const std::vector<std::string> dirs = dir_given ? std::vector<std::string>{a.peers_dir} : default_peers_dirs();
  std::set<std::string> seen;
  for (const auto& entry : split_names(a.peers)) {
    // NAME, or NAME:VARIANT+VARIANT to run only those of the peer's variants (FLA's recurrent
    // kernel takes 50 ms a call on a 32k-token prefill: `fla:chunk` leaves it out).
    const auto colon = entry.find(':');
    const std::string name = entry.substr(0, colon);
    if (std::find(kKnownPeers.begin(), kKnownPeers.end(), name) == kKnownPeers.end())
      throw input_error(fmt::format("--peers: unknown peer '{}'; the known peers are {}", name, fmt::join(kKnownPeers, ", ")));
    if (!seen.insert(name).second) continue;
    std::vector<std::string> args;
    if (colon != std::string::npos) {
      std::vector<std::string> variants;
      std::size_t start = colon + 1;
      while (start <= entry.size()) {
        const std::size_t plus = std::min(entry.find('+', start), entry.size());
        const std::string v = entry.substr(start, plus - start);
        if (v.empty())
          throw input_error(fmt::format("--peers '{}': an empty variant; give NAME:VARIANT+VARIANT, e.g. fla:chunk", entry));
        variants.push_back(v.find('/') == std::string::npos ? name + "/" + v : v);
        start = plus + 1;
      }
      args = {"--variants", fmt::format("{}", fmt::join(variants, ","))};
    }
    out.push_back({name, script_in(dirs, name + "_peer.py", dir_given), args, name + "/harness"});
  }
  if (!a.peers.empty() && out.empty()) throw input_error("--peers: no peer named; give e.g. --peers fla,flashinfer");
  for (const auto& spec : a.kernels) {
    const auto colon = spec.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size() || spec.find(':', colon + 1) != std::string::npos)
      throw input_error(fmt::format("--kernel '{}': expected MODULE:FUNCTION, e.g. --kernel mykernels:gdn_decode", spec));
    if (!seen.insert("kernel " + spec).second) continue;
    out.push_back({"kernel " + spec, script_in(dirs, kKernelHarness, dir_given), {"--kernel", spec},
                   "python:" + spec + "/harness", true});
  }
  return out;
}

void check_kernels_import(const std::vector<PeerHarness>& harnesses, const std::string& python) {
  for (const auto& h : harnesses)
    if (h.judged)
      if (auto why = harness_import_problem(h, python); !why.empty()) throw input_error(fmt::format("--kernel: {}", why));
}

int judged_exit_code(const std::vector<PeerHarness>& harnesses, const std::vector<CaseRecord>& records) {
  bool failed = false, errors = false;
  for (const auto& r : records)
    for (const auto& h : harnesses)
      if (h.judged && r.origin.path == h.label) {
        failed = failed || r.status == CaseStatus::verify_failed;
        errors = errors || r.status == CaseStatus::error;
      }
  return errors ? kExitRuntime : failed ? kExitVerifyFailed : kExitOk;
}

std::string harness_work_dir(const std::string& json) { return json.empty() ? "" : json + ".peers"; }

std::vector<CaseRecord> run_harnesses(const std::vector<PeerHarness>& harnesses, const nlohmann::json& plan,
                                      const PeerRunArgs& a, const std::vector<CaseRecord>& kept, int device, bool verify,
                                      const std::function<void(const std::vector<CaseRecord>&)>& after_each,
                                      const std::string& work_dir, bool resume) {
  std::vector<CaseRecord> out;
  if (harnesses.empty()) return out;
  const fs::path work = work_dir.empty() ? fs::temp_directory_path() / fmt::format("gdnbench-peers-{}", getpid()) : fs::path(work_dir);
  std::error_code ec;
  if (!resume) fs::remove_all(work, ec);  // a killed run's harness reports belong to that run
  fs::create_directories(work);
  for (const auto& h : harnesses) {
    if (g_interrupted) break;  // Ctrl-C: the report keeps what ran; --resume goes on
    // --resume: the points this harness already has records of (errors are run again: the
    // runner dropped them) are left out of its plan.
    std::set<std::string> done;
    for (const auto& r : kept)
      if (from_harness(r) && r.origin.path == h.label)
        done.insert(point_identity(r.case_name, r.shape_key(), r.seed));
    nlohmann::json mine = plan;
    mine["points"] = nlohmann::json::array();
    for (const auto& p : plan.at("points"))
      if (!done.count(point_identity(p.at("case").get<std::string>(), p.at("shape_key").get<std::string>(),
                                     p.at("seed").get<uint64_t>())))
        mine["points"].push_back(p);
    if (mine["points"].empty()) continue;
    HarnessRunOptions opt;
    opt.python = a.python;
    opt.work_dir = work.string();
    opt.resume = resume;
    opt.device = device;
    opt.verify = verify;
    std::vector<CaseRecord> records;
    for (auto& r : run_peer_harness(h, mine, opt)) {
      // A resumed harness report may hold points the report already has: those stay as they are.
      if (done.count(point_identity(r.case_name, r.shape_key(), r.seed))) continue;
      // The harness names the record's source; a Python kernel's file hash stays (compare names a change).
      r.origin = {kHarnessOrigin, h.label, r.origin.sha256};
      records.push_back(std::move(r));
    }
    if (after_each) after_each(records);
    out.insert(out.end(), records.begin(), records.end());
  }
  if (!g_interrupted) fs::remove_all(work, ec);
  return out;
}

}  // namespace gdn::cli

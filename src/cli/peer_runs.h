// `run --peers fla,flashinfer,flashqla` and `run --kernel module:function`: the Python harnesses
// (scripts/peers) run by gdnbench on the run's own points, inputs, mode and stopping rule, their
// records joined to the run's report (run/peer_harness.h runs one).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "config/config.h"
#include "report/record.h"
#include "run/peer_harness.h"
#include "run/plan_json.h"

namespace gdn::cli {

struct PeerRunArgs {
  std::string peers;                 // --peers NAME,NAME
  std::vector<std::string> kernels;  // --kernel module:function (repeatable)
  std::string peers_dir;             // --peers-dir: where the harness scripts are
  std::string python = "python3";    // --python
  bool any() const { return !peers.empty() || !kernels.empty(); }
};

void add_peer_run_options(CLI::App* cmd, PeerRunArgs& a);

// The harnesses the flags name, checked before anything runs: an unknown peer (naming the known
// ones), a --kernel that is not module:function, or a missing harness script is input_error (exit 3).
std::vector<PeerHarness> resolve_harnesses(const PeerRunArgs& a);

// A --kernel that cannot be imported is bad input (exit 3, with the import error), found before
// anything runs; a peer that cannot be imported is not (its records say why).
void check_kernels_import(const std::vector<PeerHarness>& harnesses, const std::string& python);

// The exit code the judged harnesses' records give (a --kernel that fails verification: 2, one
// that errs: 4), 0 when none does; `records` are run_harnesses' (origin path = harness label).
int judged_exit_code(const std::vector<PeerHarness>& harnesses, const std::vector<CaseRecord>& records);

// Where a run writing its report to `json` keeps its harnesses' plans and reports while they run:
// `json`.peers beside it, so that a --resume of that report finds a killed harness's records
// ("" without --json: a temporary folder).
std::string harness_work_dir(const std::string& json);

// Runs every harness over the plan's points, leaving out the points whose records `kept` (a
// --resume report's) already holds for that harness; returns the new records. after_each gets
// each harness's records as it ends, so the caller can write them down before the next one starts
// (a run killed inside a later harness keeps them). work_dir holds the plans and the harnesses'
// own reports ("": a folder of this process in the temporary directory); it is removed when every
// harness has ended, so a run killed inside a harness leaves that harness's report there, and a
// later call with resume lets the harness go on from it (without resume the folder starts empty).
std::vector<CaseRecord> run_harnesses(const std::vector<PeerHarness>& harnesses, const nlohmann::json& plan,
                                      const PeerRunArgs& a, const std::vector<CaseRecord>& kept, int device, bool verify,
                                      const std::function<void(const std::vector<CaseRecord>&)>& after_each = {},
                                      const std::string& work_dir = "", bool resume = false);

}  // namespace gdn::cli

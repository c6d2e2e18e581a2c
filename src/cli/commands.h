// Subcommand wiring: each add_* declares its options on `app` and sets `action` to what runs
// when that subcommand is chosen. Actions return the process exit code (src/core/errors.h).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace gdn {
// The commit this program was built from ("-dirty" with uncommitted changes), written at each
// build (cmake/git_sha.cmake).
extern const char kGitSha[];
}  // namespace gdn

namespace gdn::cli {

using Action = std::function<int()>;

void add_run(CLI::App& app, Action& action, const std::vector<std::string>& argv);
void add_verify(CLI::App& app, Action& action, const std::vector<std::string>& argv);
void add_list(CLI::App& app, Action& action);
void add_plan(CLI::App& app, Action& action);
void add_compare(CLI::App& app, Action& action);
void add_peers(CLI::App& app, Action& action);
void add_merge(CLI::App& app, Action& action);
void add_info(CLI::App& app, Action& action);
void add_calibrate(CLI::App& app, Action& action);
void add_dashboard(CLI::App& app, Action& action);

}  // namespace gdn::cli

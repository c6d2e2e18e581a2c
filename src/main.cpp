// gdnbench: Gated DeltaNet kernels, verified against an fp64 reference and timed.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/errors.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  CLI::App app{"gdnbench: Gated DeltaNet (GDN) kernels for prefill, decode and MTP verify,\n"
               "verified against an fp64 reference and timed (CUPTI on GPUs, host clock on CPUs)."};
  app.require_subcommand(1);
  // Every option's default shows in --help ("--min-samples INT=10"); subcommands inherit this.
  app.option_defaults()->always_capture_default();
  app.set_version_flag("--version", std::string(GDN_VERSION) + " (" + gdn::kGitSha + ")");
  gdn::cli::Action action;
  gdn::cli::add_run(app, action, args);
  gdn::cli::add_verify(app, action, args);
  gdn::cli::add_list(app, action);
  gdn::cli::add_plan(app, action);
  gdn::cli::add_compare(app, action);
  gdn::cli::add_peers(app, action);
  gdn::cli::add_merge(app, action);
  gdn::cli::add_info(app, action);
  gdn::cli::add_calibrate(app, action);
  gdn::cli::add_dashboard(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? gdn::kExitOk : gdn::kExitBadInput;
  }
  // Ctrl-C: run and verify install their own handler (run/interrupt.h); elsewhere it ends at once.
  // Each finished row reaches a redirected log at once, so a run cut short (a deadline, a second
  // Ctrl-C) keeps its table as far as it got.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    return action();
  } catch (const gdn::Error& e) {
    fmt::print(stderr, "gdnbench: error: {}\n", e.what());
    return e.code();
  } catch (const std::exception& e) {
    fmt::print(stderr, "gdnbench: error: {}\n", e.what());
    return gdn::kExitRuntime;
  }
}

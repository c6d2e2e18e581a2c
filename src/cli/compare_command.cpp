// `compare BASE.json NEW.json`: the regression gate.
#include <fmt/format.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/option_checks.h"
#include "compare/compare.h"
#include "core/errors.h"
#include "core/terminal.h"

namespace gdn::cli {

void add_compare(CLI::App& app, Action& action) {
  static std::string base, next;
  static double threshold = 5.0;
  static bool markdown = false;
  auto* cmd = app.add_subcommand(
      "compare",
      "Compare two reports; exit 1 on a real regression or a verification failure, exit 5 when the gate could not "
      "compare what it was asked to (cases of BASE missing from NEW, an incomplete report, a device change, nothing "
      "compared). A row is slower or faster only when its change is beyond both the threshold (--threshold, 5 % "
      "unless a case sets its own; CPU records only with --host-threshold) and the noise: a U test over the "
      "repetitions where both sides have 5 or more, else the measured noise of the fastest repetitions; an uncertain "
      "row is noisy and never fails (docs/ci.md)");
  cmd->add_option("base", base, "Baseline report (JSON)")->required();
  cmd->add_option("new", next, "New report (JSON)")->required();
  cmd->add_option("--threshold", threshold, "Slower/faster threshold, percent (a case's `threshold` in the config overrides)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--markdown", markdown, "Markdown table for pull-request comments");
  static std::vector<std::string> variants, exclude;
  cmd->add_option("--variant", variants, "Only variants matching this glob (repeatable; e.g. '*/fast'); all by default")
      ->default_str("");
  cmd->add_option("--exclude", exclude, "Leave out variants matching this glob (repeatable; e.g. 'cpu')")->default_str("");
  static std::optional<double> host_threshold;
  cmd->add_option("--host-threshold", host_threshold,
                  "Gate records timed on the host (CPU variants) at this threshold, percent (at least the case's); "
                  "without it they are never slower or faster, since a shared host's load moves them by up to 4x "
                  "between runs. For a dedicated, quiet host");
  static bool allow_missing = false, allow_incomplete = false, allow_device_change = false;
  cmd->add_flag("--allow-missing", allow_missing, "Pass although cases of BASE have no time in NEW (absent, skipped or failed)");
  cmd->add_flag("--allow-incomplete", allow_incomplete, "Pass although a report says \"complete\": false");
  cmd->add_flag("--allow-device-change", allow_device_change,
                "Pass although NEW did not run on a device model of BASE, and match cases across devices");
  check_compare_flags(cmd);
  cmd->callback([&action] {
    action = [] {
      CompareOptions opt;
      opt.threshold_pct = threshold;
      opt.variants = variants;
      opt.exclude = exclude;
      opt.host_threshold_pct = host_threshold;
      opt.allow_missing = allow_missing;
      opt.allow_incomplete = allow_incomplete;
      opt.allow_device_change = allow_device_change;
      auto r = compare_reports(load_report(base), load_report(next), opt);
      fmt::print("{}", markdown ? format_compare_markdown(r)
                                : format_compare_table(r, std::size_t(terminal_columns(STDOUT_FILENO))));
      return r.exit_code();
    };
  });
}

}  // namespace gdn::cli

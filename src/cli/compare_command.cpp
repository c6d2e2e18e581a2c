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
      "Compare two reports; exit 1 on a real regression or a verification failure. A row is slower or faster only when "
      "its change of median is beyond both the threshold (--threshold, 5 % unless a case sets its own) and the "
      "measured noise of the two medians; an uncertain row is noisy and never fails");
  cmd->add_option("base", base, "Baseline report (JSON)")->required();
  cmd->add_option("new", next, "New report (JSON)")->required();
  cmd->add_option("--threshold", threshold, "Slower/faster threshold, percent (a case's `threshold` in the config overrides)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--markdown", markdown, "Markdown table for pull-request comments");
  static std::vector<std::string> variants, exclude;
  cmd->add_option("--variant", variants, "Only variants matching this glob (repeatable; e.g. '*/fast'); all by default")
      ->default_str("");
  cmd->add_option("--exclude", exclude, "Leave out variants matching this glob (repeatable; e.g. 'cpu')")->default_str("");
  check_compare_flags(cmd);
  cmd->callback([&action] {
    action = [] {
      CompareOptions opt;
      opt.threshold_pct = threshold;
      opt.variants = variants;
      opt.exclude = exclude;
      auto r = compare_reports(load_report(base), load_report(next), opt);
      fmt::print("{}", markdown ? format_compare_markdown(r)
                                : format_compare_table(r, std::size_t(terminal_columns(STDOUT_FILENO))));
      return r.exit_code();
    };
  });
}

}  // namespace gdn::cli

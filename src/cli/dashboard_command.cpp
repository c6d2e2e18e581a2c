// `dashboard REPORT... [-o FILE.html]`: saved reports (ours and the peers') as one self-contained
// HTML page (docs/dashboard.md). Nothing is written unless every report reads and the page is
// whole: it goes to a temporary file that is renamed over FILE only at the end.
#include <fmt/format.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "cli/output_paths.h"
#include "core/errors.h"
#include "dashboard/dashboard_data.h"
#include "dashboard/dashboard_page.h"

namespace gdn::cli {
namespace {

// The same file named twice (a path and a link to it) would count its runs twice in the history.
void check_distinct(const std::vector<std::string>& paths) {
  std::vector<std::pair<dev_t, ino_t>> seen;
  for (const auto& p : paths) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) continue;  // load_report names the missing file
    for (std::size_t i = 0; i < seen.size(); ++i)
      if (seen[i] == std::pair{st.st_dev, st.st_ino})
        throw input_error(fmt::format("report '{}' is given twice (also as '{}')", p, paths[i]));
    seen.emplace_back(st.st_dev, st.st_ino);
  }
}

}  // namespace

void add_dashboard(CLI::App& app, Action& action) {
  static std::vector<std::string> reports;
  static std::string out = "dashboard.html", chart_js, title = "gdnbench dashboard";
  auto* cmd = app.add_subcommand(
      "dashboard",
      "One self-contained HTML page from saved reports (ours and the peers'): ours against every peer per shape, "
      "roofline, a prefill heat map and the history of repeated runs, drawn with Chart.js (Debian's libjs-chart.js), "
      "viewable offline");
  cmd->add_option("reports", reports, "Reports (gdnbench run --json, scripts/peers), any number")->required();
  cmd->add_option("-o,--out", out, "The HTML file to write");
  cmd->add_option("--chart-js", chart_js,
                  "Chart.js to inline (its browser build); default: the first of /usr/share/javascript/chart.js/"
                  "{chart.umd.js,chart.min.js,chart.js}")
      ->default_str("");
  cmd->add_option("--title", title, "The page's title");
  cmd->callback([&action] {
    action = [] {
      std::vector<NamedPath> inputs;
      for (const auto& r : reports) inputs.push_back({"REPORT", r});
      check_output_paths(inputs, {{"-o", out}});
      check_distinct(reports);
      // The reports first: a bad one is named (exit 3) whether or not Chart.js is installed.
      std::vector<DashboardReport> loaded;
      std::size_t records = 0;
      for (const auto& path : reports) {
        loaded.push_back({path, load_report(path)});
        records += loaded.back().report.cases.size();
      }
      const std::string chart = read_chart_js(chart_js);
      write_file_atomic(out, dashboard_html(dashboard_data(loaded), chart, title));
      fmt::print("wrote {} ({} report{}, {} record{})\n", out, loaded.size(), loaded.size() == 1 ? "" : "s", records,
                 records == 1 ? "" : "s");
      return 0;
    };
  });
}

}  // namespace gdn::cli

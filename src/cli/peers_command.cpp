// `peers OURS.json --peer PEER.json...`: the peer tables of saved reports (no GPU, nothing run).
#include <fmt/format.h>
#include <unistd.h>

#include "cli/commands.h"
#include "core/errors.h"
#include "core/terminal.h"
#include "report/harness_origin.h"
#include "report/peer_table.h"
#include "report/report.h"

namespace gdn::cli {

void add_peers(CLI::App& app, Action& action) {
  static std::string ours;
  static std::vector<std::string> peers;
  static bool markdown = false;
  auto* cmd = app.add_subcommand("peers", "Tables of a saved run against saved peer reports: each peer's time, the "
                                          "best peer and ours/best per row");
  cmd->add_option("ours", ours, "Our report (gdnbench run --json; with run --peers it holds the peers' records too)")
      ->required();
  cmd->add_option("--peer", peers, "A peer's report (scripts/peers; repeatable)")
      ->allow_extra_args(false)
      ->default_str("");
  cmd->add_flag("--markdown", markdown, "Markdown tables (docs, pull-request comments)");
  cmd->callback([&action] {
    action = [] {
      std::vector<CaseRecord> peer_cases, our_cases;
      for (const auto& path : peers)
        for (auto& c : load_report(path).cases) peer_cases.push_back(std::move(c));
      // A run --peers report: the harnesses' records are the peers.
      for (auto& c : load_report(ours).cases) (from_harness(c) ? peer_cases : our_cases).push_back(std::move(c));
      if (peer_cases.empty())
        throw input_error(fmt::format("'{}' holds no peer records (from run --peers) and no --peer report is given", ours));
      fmt::print("{}", markdown ? format_peer_markdown(our_cases, peer_cases)
                                : format_peer_table(our_cases, peer_cases, std::size_t(terminal_columns(STDOUT_FILENO))));
      return 0;
    };
  });
}

}  // namespace gdn::cli

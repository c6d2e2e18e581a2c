// `merge`: shard reports (run --shard I/N) into one report (report/merge.h).
#include <fmt/format.h>

#include <algorithm>

#include "cli/commands.h"
#include "cli/output_paths.h"
#include "core/errors.h"
#include "report/merge.h"

namespace gdn::cli {

void add_merge(CLI::App& app, Action& action) {
  static std::vector<std::string> inputs;
  static std::string output;
  static bool allow_partial = false;
  auto* cmd = app.add_subcommand("merge", "Join the reports of a sweep's shards (run --shard I/N) into one report");
  cmd->add_option("reports", inputs, "Shard reports, one per shard, in any order")->required()->default_str("");
  cmd->add_option("-o,--output", output, "The merged report")->required();
  cmd->add_flag("--allow-partial", allow_partial,
                "Merge even when a shard is missing or incomplete (the merged report then says \"complete\": false)");
  cmd->callback([&action] {
    action = [] {
      std::vector<NamedPath> in;
      for (const auto& p : inputs) in.push_back({"report", p});
      check_output_paths(in, {{"--output", output}});
      std::vector<ShardReport> shards;
      for (const auto& p : inputs) shards.push_back({p, load_report(p)});
      const RunReport merged = merge_shard_reports(shards, allow_partial);
      write_report(output, merged);
      const std::size_t count = std::max<std::size_t>(1, shards.front().report.shard_count);
      fmt::print("merged {} of {} shards, {} cases{}: {}\n", shards.size(), count, merged.cases.size(),
                 merged.complete ? "" : " (incomplete)", output);
      return kExitOk;
    };
  });
}

}  // namespace gdn::cli

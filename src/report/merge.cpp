#include "report/merge.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/errors.h"

namespace gdn {
namespace {

std::size_t shard_count(const RunReport& r) { return r.shard_count == 0 ? 1 : r.shard_count; }

std::string case_identity(const CaseRecord& c) {
  return fmt::format("{} {} (mode {}, device '{}')", c.variant, c.shape_key(), c.mode, c.device);
}

// The same run: what the report is of and the build that wrote it.
void check_same_run(const ShardReport& first, const ShardReport& other) {
  const RunReport &a = first.report, &b = other.report;
  auto differ = [&](const char* what, const std::string& x, const std::string& y) {
    if (x != y)
      throw input_error(fmt::format("'{}' is not a shard of the same run as '{}': its {} is '{}', not '{}'", other.path,
                                    first.path, what, y, x));
  };
  differ("command", a.command, b.command);
  differ("config hash", a.config_hash, b.config_hash);
  differ("mode", a.mode, b.mode);
  differ("gdnbench version", a.tool_version, b.tool_version);
  differ("gdnbench commit", a.git_sha, b.git_sha);
  if (shard_count(a) != shard_count(b))
    throw input_error(fmt::format("'{}' is shard {} of {}, but '{}' is of {} shards", other.path, b.shard_index,
                                  shard_count(b), first.path, shard_count(a)));
}

// argv without --shard I/N (or --shard=I/N): the command the merged report stands for.
std::vector<std::string> without_shard(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--shard") ++i;
    else if (argv[i].rfind("--shard=", 0) != 0) out.push_back(argv[i]);
  }
  return out;
}

}  // namespace

RunReport merge_shard_reports(const std::vector<ShardReport>& inputs, bool allow_partial) {
  if (inputs.empty()) throw input_error("merge needs at least one report");
  const ShardReport& first = inputs.front();
  const std::size_t count = shard_count(first.report);
  std::vector<const ShardReport*> by_index(count, nullptr);
  for (const auto& in : inputs) {
    check_same_run(first, in);
    const std::size_t index = in.report.shard_index;
    if (by_index[index])
      throw input_error(fmt::format("'{}' and '{}' are both shard {} of {}", by_index[index]->path, in.path, index, count));
    by_index[index] = &in;
    if (!in.report.complete && !allow_partial)
      throw input_error(fmt::format("'{}' (shard {} of {}) is incomplete (interrupted or still running): run it "
                                    "again with --resume, or pass --allow-partial",
                                    in.path, index, count));
  }
  std::vector<std::string> missing;
  for (std::size_t i = 0; i < count; ++i)
    if (!by_index[i]) missing.push_back(std::to_string(i));
  if (!missing.empty() && !allow_partial)
    throw input_error(fmt::format("shard{} {} of {} {} missing ({} of {} given); pass every shard's report, or "
                                  "--allow-partial",
                                  missing.size() == 1 ? "" : "s", fmt::join(missing, ", "), count,
                                  missing.size() == 1 ? "is" : "are", inputs.size(), count));

  // No case twice: overlapping shards (or one report given under two names) are refused.
  std::map<std::string, const std::string*> owner;
  for (const auto& in : inputs)
    for (const auto& c : in.report.cases) {
      auto [it, fresh] = owner.emplace(case_identity(c), &in.path);
      if (!fresh)
        throw input_error(fmt::format("'{}' and '{}' both hold {}: the shards overlap", *it->second, in.path,
                                      case_identity(c)));
    }

  RunReport out = first.report;
  out.argv = without_shard(first.report.argv);
  out.shard_index = out.shard_count = 0;
  out.cases.clear();
  out.complete = missing.empty();
  for (const auto* in : by_index) {
    if (!in) continue;
    const RunReport& r = in->report;
    out.complete = out.complete && r.complete;
    if (!r.started_at.empty() && (out.started_at.empty() || r.started_at < out.started_at)) out.started_at = r.started_at;
    if (r.finished_at.empty() || out.finished_at.empty()) out.finished_at = "";
    else out.finished_at = std::max(out.finished_at, r.finished_at);
    for (const auto& d : r.devices)
      if (std::none_of(out.devices.begin(), out.devices.end(), [&](const DeviceInfo& e) { return e.uuid == d.uuid; }))
        out.devices.push_back(d);
    for (auto it = r.calibration.begin(); it != r.calibration.end(); ++it) {
      auto& slot = out.calibration[it.key()];
      if (!slot.is_number() || (it.value().is_number() && slot.get<double>() < it.value().get<double>()))
        slot = it.value();
    }
  }
  if (!out.complete) out.finished_at = "";
  // Shard i holds plan entries i, i + N, ...: dealing the shards' records back in turn restores
  // the plan order of an unsharded run.
  for (std::size_t k = 0;; ++k) {
    bool any = false;
    for (const auto* in : by_index)
      if (in && k < in->report.cases.size()) out.cases.push_back(in->report.cases[k]), any = true;
    if (!any) break;
  }
  return out;
}

}  // namespace gdn

// `list` (ops, variants, where each can run) and `plan` (a sweep's expanded points).
#include <fmt/format.h>
#include <iostream>

#include "core/axes.h"
#include "cli/commands.h"
#include "config/config.h"
#include "core/op.h"
#include "core/registry.h"
#include "report/report.h"
#include "run/backend.h"

namespace gdn::cli {
namespace {

std::string arch_range(const Variant& v) {
  if (v.backend == Backend::cpu) return "host";
  auto sm = [](int a) { return fmt::format("sm_{}", a); };
  return v.max_arch >= 1000 ? sm(v.min_arch) + "+" : sm(v.min_arch) + ".." + sm(v.max_arch);
}

int list_variants(bool show_test_only) {
  std::string cuda_why;
  auto cuda = make_cuda_backend(0, &cuda_why);
  for (auto* op : all_ops()) {
    fmt::print("{}: {}\n", op->name, op->summary);
    for (auto& v : Registry::instance().variants()) {
      if (v.op != op->kind || (v.test_only && !show_test_only)) continue;
      std::string here = v.backend == Backend::cpu ? "" : (cuda ? cuda->can_run(v) : cuda_why);
      fmt::print("  {:<24} {:<5} {:<12} {:<4} {}{}\n", v.name, to_string(v.backend), arch_range(v),
                 here.empty() ? "yes" : "no", v.description, v.test_only ? " [test only]" : "");
      if (!here.empty()) fmt::print("  {:<24} {:<5} {:<12}      cannot run here: {}\n", "", "", "", here);
    }
  }
  return 0;
}

int plan(const std::string& path, const std::string& json_out) {
  auto cfg = load_config(path);
  nlohmann::json j;
  j["config"] = {{"path", cfg.path}, {"hash", cfg.hash}};
  j["axes"] = axes_to_json();  // the shape fields and per-op defaults peer harnesses read
  j["points"] = nlohmann::json::array();
  for (auto& c : cfg.cases)
    for (std::size_t i = 0; i < c.shapes.size(); ++i) {
      auto vs = Registry::instance().match(c.op, c.variant_glob);
      std::vector<std::string> names;
      for (auto* v : vs) names.push_back(v->name);
      j["points"].push_back({{"case", c.name}, {"op", std::string(to_string(c.op))}, {"variant_glob", c.variant_glob},
                             {"variants", names}, {"seed", c.seed + i}, {"shape_key", c.shapes[i].key()},
                             {"shape", to_json(c.shapes[i])}});
      if (json_out.empty()) fmt::print("{:<22} {:<8} {}\n", c.name, to_string(c.op), c.shapes[i].key());
    }
  if (!json_out.empty()) write_file_atomic(json_out, j.dump(2) + "\n");
  else fmt::print("{} points\n", cfg.total_points());
  return 0;
}

}  // namespace

void add_list(CLI::App& app, Action& action) {
  static bool all = false;
  auto* cmd = app.add_subcommand("list", "Ops and variants, the architectures each supports, and whether each can run here");
  cmd->add_flag("--all", all, "Include test-only variants");
  cmd->callback([&action] { action = [] { return list_variants(all); }; });
}

void add_plan(CLI::App& app, Action& action) {
  static std::string config, json;
  auto* cmd = app.add_subcommand("plan", "Expand a sweep file into its points (no running); --json for peer harnesses");
  cmd->add_option("--config", config, "Sweep file (YAML or JSON)")->required();
  cmd->add_option("--json", json, "Write the points as JSON here");
  cmd->callback([&action] { action = [] { return plan(config, json); }; });
}

}  // namespace gdn::cli

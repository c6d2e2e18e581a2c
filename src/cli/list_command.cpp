// `list` (ops, variants, where each can run, the knobs of the plan axis) and `plan` (a sweep's
// expanded points). `list` fits the terminal's width (COLUMNS; 120 off a terminal).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/plugin_option.h"
#include "config/config.h"
#include "core/op.h"
#include "core/registry.h"
#include "core/terminal.h"
#include "plugin/plugin_loader.h"
#include "report/report.h"
#include "run/backend.h"
#include "run/plan_json.h"

namespace gdn::cli {
namespace {

std::string arch_range(const Variant& v) {
  if (v.backend == Backend::cpu) return "host";
  auto sm = [](int a) { return fmt::format("sm_{}", a); };
  if (v.max_arch >= 1000) return sm(v.min_arch) + "+";
  return v.min_arch == v.max_arch ? sm(v.min_arch) : sm(v.min_arch) + ".." + sm(v.max_arch);
}

// Text folded at spaces into lines of at most `width` columns: the first line starts after
// `first` used columns, the others after `indent`. A word wider than a line is cut.
std::vector<std::string> fold(const std::string& text, std::size_t first, std::size_t indent, std::size_t width) {
  std::vector<std::string> lines(1);
  std::size_t start = first;  // columns used before the current line's text
  auto room = [&] { return width > start + lines.back().size() ? width - start - lines.back().size() : 0; };
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    while (!word.empty()) {
      const std::size_t gap = lines.back().empty() ? 0 : 1;
      if (gap + word.size() <= room()) {
        lines.back() += (gap ? " " : "") + word;
        break;
      }
      if (!lines.back().empty() || start > indent) {  // the next line has more room
        lines.emplace_back(), start = indent;
        continue;
      }
      const std::size_t cut = std::max<std::size_t>(room(), 1);
      lines.back() = word.substr(0, cut);
      word.erase(0, cut);
      if (!word.empty()) lines.emplace_back();
    }
  }
  return lines;
}

void print_folded(const std::string& head, const std::string& text, std::size_t indent, std::size_t width) {
  const auto lines = fold(text, head.size(), indent, width);
  fmt::print("{}{}\n", head, lines.front());
  for (std::size_t l = 1; l < lines.size(); ++l)
    if (!lines[l].empty()) fmt::print("{:{}}{}\n", "", indent, lines[l]);
}

bool same_knobs(const std::vector<PlanKnob>& a, const std::vector<PlanKnob>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const PlanKnob& x, const PlanKnob& y) {
    return x.name == y.name && x.values == y.values && x.help == y.help;
  });
}

// The knobs of every listed variant that declares some, one block per table (decode/fast and
// mtp/fast share theirs): each knob's values, then what it changes.
void print_knobs(const std::vector<const Variant*>& shown, std::size_t width) {
  std::vector<std::pair<std::vector<std::string>, const std::vector<PlanKnob>*>> tables;
  for (const Variant* v : shown) {
    if (v->knobs.empty()) continue;
    auto same = std::find_if(tables.begin(), tables.end(), [&](const auto& t) { return same_knobs(*t.second, v->knobs); });
    if (same == tables.end()) tables.push_back({{v->name}, &v->knobs});
    else same->first.push_back(v->name);
  }
  if (tables.empty()) return;
  fmt::print("\n");
  print_folded("", "Knobs a config's plan axis sets (plan: \"knob=value,...\", docs/plans.md):", 0, width);
  for (const auto& [names, knobs] : tables) {
    print_folded("  ", fmt::format("{}", fmt::join(names, ", ")), 4, width);
    std::size_t w = 0;
    for (const auto& k : *knobs) w = std::max(w, k.name.size());
    const std::size_t indent = 4 + w + 2;
    for (const auto& k : *knobs) {
      print_folded(fmt::format("    {:<{}}  ", k.name, w), fmt::format("{}", fmt::join(k.values, ", ")), indent, width);
      print_folded(std::string(indent, ' '), k.help, indent, width);
    }
  }
}

// One line per variant (name, backend, architectures, whether it runs here), its description
// folded below it. A reason it cannot run here is a numbered note under the table, given once
// however many variants share it (without a driver, every CUDA variant does).
int list_variants(bool show_test_only) {
  const std::size_t width = std::size_t(terminal_columns(STDOUT_FILENO));
  std::string cuda_why;
  auto cuda = make_cuda_backend(0, &cuda_why);
  std::vector<const Variant*> shown;
  std::size_t name_width = 8;
  for (auto& v : Registry::instance().variants())
    if (!v.test_only || show_test_only) shown.push_back(&v), name_width = std::max(name_width, v.name.size());
  std::vector<std::string> reasons;
  auto note = [&](const std::string& why) {
    auto it = std::find(reasons.begin(), reasons.end(), why);
    if (it == reasons.end()) it = reasons.insert(it, why);
    return std::size_t(it - reasons.begin()) + 1;
  };
  for (auto* op : all_ops()) {
    print_folded(fmt::format("{}: ", op->name), op->summary, 2, width);
    for (const Variant* v : shown) {
      if (v->op != op->kind) continue;
      const std::string why = v->backend == Backend::cpu ? "" : (cuda ? cuda->can_run(*v) : cuda_why);
      const std::string here = why.empty() ? "yes" : fmt::format("no [{}]", note(why));
      std::string tags;
      if (!v->knobs.empty()) tags += "  takes a plan";
      if (v->test_only) tags += "  [test only]";
      if (v->origin.external()) tags += "  [" + v->origin.kind + " " + v->origin.path + "]";
      fmt::print("  {:<{}}  {:<4}  {:<12}  {}{}\n", v->name, name_width, to_string(v->backend), arch_range(*v), here, tags);
      print_folded(std::string(6, ' '), v->description, 6, width);
    }
  }
  for (std::size_t i = 0; i < reasons.size(); ++i)
    print_folded(fmt::format("[{}] cannot run here: ", i + 1), reasons[i], 4, width);
  print_knobs(shown, width);
  return 0;
}

int plan(const std::string& path, const std::string& json_out) {
  auto cfg = load_config(path);
  const nlohmann::json j = plan_json(cfg, PlanJsonOptions{});
  if (!json_out.empty()) {
    write_file_atomic(json_out, j.dump(2) + "\n");
    return 0;
  }
  for (const auto& p : j["points"])
    fmt::print("{:<22} {:<8} {}\n", p["case"].get<std::string>(), p["op"].get<std::string>(), p["shape_key"].get<std::string>());
  fmt::print("{} points\n", cfg.total_points());
  return 0;
}

}  // namespace

void add_list(CLI::App& app, Action& action) {
  static bool all = false;
  static std::vector<std::string> plugins;
  auto* cmd = app.add_subcommand("list", "Ops and variants, the architectures each supports, and whether each can run here");
  cmd->add_flag("--all", all, "Include test-only variants");
  add_plugin_option(cmd, plugins, "Also list this kernel library's variants (repeatable; docs/plugins.md)");
  cmd->callback([&action] {
    action = [] {
      load_plugins(plugins);
      return list_variants(all);
    };
  });
}

void add_plan(CLI::App& app, Action& action) {
  static std::string config, json;
  static std::vector<std::string> plugins;
  auto* cmd = app.add_subcommand("plan", "Expand a sweep file into its points (no running); --json for peer harnesses");
  cmd->add_option("--config", config, "Sweep file (YAML or JSON)")->required();
  cmd->add_option("--json", json, "Write the points as JSON here");
  add_plugin_option(cmd, plugins, "Match this kernel library's variants too (repeatable; docs/plugins.md)");
  cmd->callback([&action] {
    action = [] {
      load_plugins(plugins);
      return plan(config, json);
    };
  });
}

}  // namespace gdn::cli

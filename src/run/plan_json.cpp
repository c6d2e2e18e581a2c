#include "run/plan_json.h"

#include <vector>

#include "core/axes.h"
#include "core/op.h"
#include "core/registry.h"
#include "report/report.h"
#include "run/input_distribution.h"
#include "stats/noise_estimator.h"

namespace gdn {
namespace {

nlohmann::json work_json(const WorkModel& w) {
  return {{"bytes", w.bytes}, {"flops", w.flops}, {"flops_fi", w.flops_fi}, {"bandwidth_bound", w.bandwidth_bound}};
}

nlohmann::json tolerances_json(const Shape& s) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& t : op_def(s.op).tolerances(s)) out[t.tensor] = t.rel_l2;
  return out;
}

nlohmann::json rule_json(const StoppingRule& r) {
  const NoiseEstimator n = noise_estimator();
  return {{"warmup_runs", r.warmup_runs},
          {"min_samples", r.min_samples},
          {"max_samples", r.max_samples},
          {"min_time_s", r.min_time_s},
          {"max_noise", r.max_noise},
          {"timeout_s", r.timeout_s},
          {"noise", {{"min_samples", n.min_samples},
                     {"median_se_factor", n.median_se_factor},
                     {"iqr_per_sigma", n.iqr_per_sigma}}}};
}

}  // namespace

nlohmann::json plan_json(const SweepConfig& cfg, const PlanJsonOptions& opt) {
  nlohmann::json j;
  j["config"] = {{"path", cfg.path}, {"hash", cfg.hash}};
  j["axes"] = axes_to_json();  // the shape fields and per-op defaults peer harnesses read
  j["mode"] = opt.mode;
  j["stopping_rule"] = rule_json(opt.rule);
  j["points"] = nlohmann::json::array();
  std::size_t index = 0;
  for (auto& c : cfg.cases) {
    if (opt.op && c.op != *opt.op) continue;
    std::vector<std::string> names;
    for (auto* v : Registry::instance().match(c.op, c.variant_glob)) names.push_back(v->name);
    for (std::size_t i = 0; i < c.shapes.size(); ++i, ++index) {
      if (!opt.shard.holds(index)) continue;
      const Shape& s = c.shapes[i];
      j["points"].push_back({{"case", c.name},
                             {"op", std::string(to_string(c.op))},
                             {"variant_glob", c.variant_glob},
                             {"variants", names},
                             {"seed", opt.seed.value_or(c.seed) + i},
                             {"shape_key", s.key()},
                             {"shape", to_json(s)},
                             {"work", work_json(op_def(s.op).work(s))},
                             {"tolerances", tolerances_json(s)},
                             {"inputs", input_distribution_json(s)}});
    }
  }
  return j;
}

}  // namespace gdn

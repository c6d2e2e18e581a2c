// The plan axis (docs/plans.md): the spec text and its checks against a knob table, its part of
// the shape key and of the report's shape object, and the runner's skip of a variant without
// knobs at a non-default plan.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/axes.h"
#include "core/op.h"
#include "core/plan_spec.h"
#include "core/registry.h"
#include "report/report.h"
#include "run/runner.h"

namespace gdn {
namespace {

TEST(PlanSpec, ParsesNormalisesAndRefuses) {
  EXPECT_TRUE(parse_plan_spec("").empty());
  EXPECT_TRUE(parse_plan_spec(" default ").empty());
  const auto s = parse_plan_spec(" schedule = fused ,cp=off");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].knob, "schedule");
  EXPECT_EQ(s[0].value, "fused");
  EXPECT_EQ(s[1].knob, "cp");
  EXPECT_EQ(normalize_plan_spec(" schedule = fused ,cp=off"), "schedule=fused,cp=off");
  EXPECT_EQ(normalize_plan_spec("default"), "");
  for (const char* bad : {"schedule", "=fused", "schedule=", "a=1,,b=2", "a=1,a=2", "a b=1", "a=1=2", ","})
    EXPECT_THROW(normalize_plan_spec(bad), std::invalid_argument) << bad;
}

TEST(PlanSpec, ChecksAgainstAKnobTable) {
  const std::vector<PlanKnob> knobs{{"schedule", {"two_pass", "fused"}, ""}, {"block_v", {"<n>"}, ""}};
  EXPECT_EQ(check_plan_knobs(knobs, "schedule=fused,block_v=64"), "");
  EXPECT_EQ(check_plan_knobs(knobs, ""), "");
  EXPECT_EQ(check_plan_knobs(knobs, "colour=red"), "unknown knob 'colour' (knobs: schedule, block_v)");
  EXPECT_EQ(check_plan_knobs(knobs, "schedule=v4"), "knob schedule takes two_pass, fused, not 'v4'");
  EXPECT_NE(check_plan_knobs(knobs, "block_v=0"), "");  // <n>: a positive integer
  EXPECT_NE(check_plan_knobs(knobs, "block_v=x"), "");
  EXPECT_NE(check_plan_knobs(knobs, "block_v"), "");
}

TEST(PlanAxis, EntersTheKeyAndTheShapeObject) {
  Shape s = op_def(OpKind::decode).default_shape();
  const std::string plain = s.key();
  s.plan = "kernel=mma,form=bf16";
  EXPECT_EQ(s.key(), plain + " plan=kernel=mma,form=bf16");
  const nlohmann::json j = shape_to_json(s);
  EXPECT_EQ(j.at("plan"), "kernel=mma,form=bf16");
  EXPECT_EQ(shape_from_json_object(j).key(), s.key());
  // A shape object without the field (a report written before the axis) is the default plan.
  nlohmann::json old = j;
  old.erase("plan");
  EXPECT_EQ(shape_from_json_object(old).key(), plain);
  // The record keeps both: the spec in its shape, the plan line that ran in "plan".
  CaseRecord r;
  r.variant = "decode/fast", r.shape = s, r.plan = "mma form=bf16 (1 warp/block, 12 warps/SM, <= 168 registers)";
  const CaseRecord back = record_from_json(to_json(r));
  EXPECT_EQ(back.shape.key(), s.key());
  EXPECT_EQ(back.shape.plan, s.plan);
  EXPECT_EQ(back.plan, r.plan);
  const nlohmann::json table = axes_to_json();
  EXPECT_EQ(table["axes"].back()["key"], "plan");
  EXPECT_EQ(table["defaults"]["decode"]["plan"], "");
}

TEST(PlanAxis, VariantsWithoutKnobsSkipOtherPlans) {
  // decode/cpu has no knobs: at a non-default plan it is a skip that says why; decode/fast
  // (knobs) took the plan when the config loaded and runs it where there is a GPU.
  auto cfg = parse_config(R"(
cases:
  - op: decode
    variant: "*"
    heads: [2, 4]
    batch: 2
    plan: [default, "kernel=decode_vk,depth=1"]
)",
                          "ab.yaml");
  RunOptions o;
  o.time = false, o.progress = false;
  RunReport report;
  run_sweep(cfg, o, report);
  int cpu_default = 0, cpu_skipped = 0;
  for (const auto& r : report.cases) {
    if (r.variant != "decode/cpu") continue;
    if (r.shape.plan.empty()) {
      EXPECT_EQ(r.status, CaseStatus::ok) << r.reason;
      ++cpu_default;
    } else {
      EXPECT_EQ(r.status, CaseStatus::skipped);
      EXPECT_NE(r.reason.find("takes no plan"), std::string::npos) << r.reason;
      EXPECT_NE(r.shape.key().find(" plan=kernel=decode_vk,depth=1"), std::string::npos) << r.shape.key();
      ++cpu_skipped;
    }
  }
  EXPECT_EQ(cpu_default, 1);
  EXPECT_EQ(cpu_skipped, 1);
}

}  // namespace
}  // namespace gdn

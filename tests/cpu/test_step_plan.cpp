// The routing of the step kernel family (kernels/step/plan.h) without a GPU: which kernel, tile
// depth and tensor-core form each call gets, the knobs the `plan` axis sets for an A/B, the
// checks that refuse plans a kernel cannot run, and the plan line reports record.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "core/registry.h"
#include "step/plan.h"
#include "step/step.h"

namespace gdn {
namespace {

using step::Call;
using step::Kernel;
using step::MmaForm;
using step::Plan;

Call call_of(int64_t batch, int h_v, Layout layout, DType state, int tokens = 1) {
  Call c;
  c.B = batch, c.HV = h_v, c.K = c.V = 128, c.T = tokens;
  c.layout = layout, c.state_dtype = state;
  return c;
}

int depth_of(const Call& c) { return step::choose(c).depth; }
bool on_tensor_cores(const Call& c) {
  const Kernel k = step::choose(c).kernel;
  return k == Kernel::mma || k == Kernel::mma_pipelined;
}

TEST(StepPlan, DepthFollowsTheNumberOfHeads) {
  // single-token vk calls: decode_vk
  EXPECT_EQ(step::choose(call_of(1, 32, Layout::vk, DType::f32)).kernel, Kernel::decode_vk);
  EXPECT_EQ(depth_of(call_of(1, 32, Layout::vk, DType::f32)), 1);
  EXPECT_EQ(depth_of(call_of(1, 32, Layout::vk, DType::bf16)), 2);
  EXPECT_EQ(depth_of(call_of(4, 32, Layout::vk, DType::f32)), 2);
  EXPECT_EQ(depth_of(call_of(8, 32, Layout::vk, DType::f32)), 4);
  EXPECT_EQ(depth_of(call_of(64, 32, Layout::vk, DType::f32)), 4);
  EXPECT_EQ(depth_of(call_of(256, 32, Layout::vk, DType::bf16)), 4);
  // T tokens: the register-resident T-token kernel
  Call m = call_of(8, 32, Layout::vk, DType::f32, 4);
  EXPECT_EQ(step::choose(m).kernel, Kernel::tokens_vk);
  EXPECT_EQ(depth_of(m), 2);
  m.B = 16;
  EXPECT_EQ(depth_of(m), 4);
  // fp32 kv single-token calls: tokens_kv; bf16 kv: decode_kv, 4 lanes per K row from 64 heads
  EXPECT_EQ(step::choose(call_of(1, 32, Layout::kv, DType::f32)).kernel, Kernel::tokens_kv);
  EXPECT_EQ(depth_of(call_of(1, 32, Layout::kv, DType::f32)), 2);
  EXPECT_EQ(depth_of(call_of(64, 32, Layout::kv, DType::f32)), 4);
  EXPECT_EQ(step::choose(call_of(64, 32, Layout::kv, DType::bf16)).kernel, Kernel::decode_kv);
  EXPECT_EQ(depth_of(call_of(2, 32, Layout::kv, DType::bf16)), 2);
  EXPECT_EQ(depth_of(call_of(64, 32, Layout::kv, DType::bf16)), 4);
  Call kv = call_of(8, 32, Layout::kv, DType::bf16, 4);
  EXPECT_EQ(step::choose(kv).kernel, Kernel::tokens_kv);
  EXPECT_EQ(depth_of(kv), 2);
}

TEST(StepPlan, TensorCoresTakeLongCallsWithoutTheCache) {
  Call m = call_of(16, 32, Layout::vk, DType::f32, 4);
  EXPECT_FALSE(on_tensor_cores(m));
  // T = 6 and 7 with an fp32 pool: the tensor-core kernels, except T = 6 at 129-1024 pairs
  m.T = 7;
  EXPECT_TRUE(on_tensor_cores(m));  // 16 x 32 pairs
  m.T = 6;
  EXPECT_FALSE(on_tensor_cores(m));
  m.B = 32;  // 1024 pairs
  EXPECT_FALSE(on_tensor_cores(m));
  m.B = 33;
  EXPECT_TRUE(on_tensor_cores(m));
  m.B = 4;  // 128 pairs: the plain tensor-core kernel
  EXPECT_EQ(step::choose(m).kernel, Kernel::mma);
  m.state_dtype = DType::bf16, m.T = 7;
  EXPECT_FALSE(on_tensor_cores(m));
  m.state_dtype = DType::f32, m.T = 5, m.B = 64;
  EXPECT_FALSE(on_tensor_cores(m));
  m.B = 4;  // 128 pairs: T = 5 on the plain tensor-core kernel
  EXPECT_EQ(step::choose(m).kernel, Kernel::mma);
  m.B = 128, m.T = 7;  // 4096 pairs: pipelined, its TF32 build
  EXPECT_EQ(step::choose(m), (Plan{Kernel::mma_pipelined, 0, 1, MmaForm::tf32, false}));
  m.B = 64;  // 2048 pairs: pipelined on bf16 MMAs
  EXPECT_EQ(step::choose(m), (Plan{Kernel::mma_pipelined, 0, 1, MmaForm::bf16, false}));
  m.B = 128, m.T = 8;
  EXPECT_EQ(step::choose(m).kernel, Kernel::mma_pipelined);
  m.B = 256;  // T = 8 from 8192 pairs: plain
  EXPECT_EQ(step::choose(m), (Plan{Kernel::mma, 0, 1, MmaForm::bf16, false}));
  m.update_state = false;  // the READ_ONLY build stays pipelined, on bf16 MMAs
  EXPECT_EQ(step::choose(m), (Plan{Kernel::mma_pipelined, 0, 1, MmaForm::bf16, true}));
  m.update_state = true, m.B = 16, m.T = 16;  // beyond 8 tokens: plain
  EXPECT_EQ(step::choose(m).kernel, Kernel::mma);
  m.T = 8;  // from 8 tokens on: the tensor-core kernel, unless the cache is asked for
  EXPECT_TRUE(on_tensor_cores(m));
  m.cache = true;
  EXPECT_FALSE(on_tensor_cores(m));
  m.cache = false, m.layout = Layout::kv;
  EXPECT_FALSE(on_tensor_cores(m));
}

TEST(StepPlan, ReadOnlyCalls) {
  // update off without the cache, up to kGramTokens tokens, vk: the read-only kernel
  Call m = call_of(16, 32, Layout::vk, DType::f32, 4);
  m.update_state = false;
  EXPECT_EQ(step::choose(m), (Plan{Kernel::read_only_vk, 4, 4, MmaForm::none, false}));
  m.V = 96;  // a multiple of 32, not 64: two tiles per warp
  EXPECT_EQ(step::choose(m).tiles, 2);
  m.V = 48;
  EXPECT_EQ(step::choose(m).tiles, 1);
  m.V = 128, m.B = 1;  // 32 pairs: depth 1, one tile
  EXPECT_EQ(step::choose(m), (Plan{Kernel::read_only_vk, 1, 1, MmaForm::none, false}));
  m.B = 16, m.layout = Layout::kv;
  EXPECT_EQ(step::choose(m).kernel, Kernel::tokens_kv);
  m.layout = Layout::vk, m.T = 5;  // from 5 tokens, fp32, from 129 pairs: tensor-core READ_ONLY
  EXPECT_EQ(step::choose(m), (Plan{Kernel::mma_pipelined, 0, 1, MmaForm::bf16, true}));
  m.state_dtype = DType::bf16;
  EXPECT_EQ(step::choose(m).kernel, Kernel::tokens_vk);
  m.state_dtype = DType::f32, m.B = 2;  // 64 pairs: T = 5 on the plain kernel's READ_ONLY build
  EXPECT_EQ(step::choose(m), (Plan{Kernel::mma, 0, 1, MmaForm::bf16, true}));
  m.B = 8, m.T = 9;  // two chunks: the first one updates the state
  EXPECT_FALSE(step::read_only_call(m));
  EXPECT_EQ(step::choose(m), (Plan{Kernel::mma, 0, 1, MmaForm::bf16, false}));
  m.T = 2, m.cache = true;
  EXPECT_EQ(step::choose(m).kernel, Kernel::tokens_vk);
}

TEST(StepPlan, EveryChosenPlanPassesItsOwnCheck) {
  for (Layout layout : {Layout::vk, Layout::kv})
    for (DType state : {DType::f32, DType::bf16})
      for (int tokens : {1, 2, 4, 5, 6, 7, 8, 9, 16, 64})
        for (int64_t batch : {1, 2, 4, 16, 33, 64, 128, 256, 512})
          for (bool update : {true, false})
            for (bool cache : {false, true}) {
              Call c = call_of(batch, 32, layout, state, tokens);
              c.update_state = update || tokens == 1;
              c.cache = cache && tokens > 1;
              const Plan p = step::choose(c);
              EXPECT_EQ(step::check(p, c), "") << p.describe(state);
            }
}

TEST(StepPlan, ChecksRefusePlansNoKernelRuns) {
  const Call d = call_of(4, 32, Layout::vk, DType::f32);
  EXPECT_NE(step::check(Plan{Kernel::decode_vk, 3}, d), "");           // no depth 3
  EXPECT_NE(step::check(Plan{Kernel::decode_kv, 2}, d), "");           // kv only
  EXPECT_NE(step::check(Plan{Kernel::tokens_kv, 2}, d), "");           // kv only
  EXPECT_NE(step::check(Plan{Kernel::read_only_vk, 4}, d), "");        // update on
  const Call kv = call_of(4, 32, Layout::kv, DType::bf16, 4);
  EXPECT_EQ(step::check(Plan{Kernel::tokens_kv, 2}, kv), "");
  EXPECT_NE(step::check(Plan{Kernel::tokens_kv, 4}, kv), "");          // bf16 kv: depth 2 only
  EXPECT_NE(step::check(Plan{Kernel::mma, 0, 1, MmaForm::bf16}, kv), "");  // vk only
  Call m = call_of(4, 32, Layout::vk, DType::bf16, 8);
  EXPECT_EQ(step::check(Plan{Kernel::mma, 0, 1, MmaForm::bf16}, m), "");
  EXPECT_NE(step::check(Plan{Kernel::mma, 0, 1, MmaForm::tf32}, m), "");            // plain: bf16 MMAs
  EXPECT_NE(step::check(Plan{Kernel::mma_pipelined, 0, 1, MmaForm::bf16}, m), "");  // fp32 pools only
  EXPECT_NE(step::check(Plan{Kernel::mma, 0, 1, MmaForm::bf16, true}, m), "");      // would skip the update
  m.V = 40;
  EXPECT_NE(step::check(Plan{Kernel::tokens_vk, 4}, m), "");  // 16 rows per warp do not divide V
}

TEST(StepPlan, OverrideForcesFieldsAndFillsTheRest) {
  const Call m = call_of(16, 32, Layout::vk, DType::f32, 4);
  const Plan chosen = step::choose(m);
  ASSERT_EQ(chosen.kernel, Kernel::tokens_vk);
  const Plan mma = step::apply_override(chosen, "kernel=mma", m);
  EXPECT_EQ(mma, (Plan{Kernel::mma, 0, 1, MmaForm::bf16, false}));
  EXPECT_EQ(step::check(mma, m), "");
  EXPECT_EQ(step::apply_override(chosen, "depth=1", m).depth, 1);
  EXPECT_EQ(step::apply_override(chosen, "kernel=mma_pipelined, form = tf32", m).form, MmaForm::tf32);
  EXPECT_EQ(step::apply_override(mma, "kernel=tokens_vk", m), chosen);
  EXPECT_THROW(step::apply_override(chosen, "kernel=warp9", m), std::invalid_argument);
  EXPECT_THROW(step::apply_override(chosen, "depth", m), std::invalid_argument);
  EXPECT_THROW(step::apply_override(chosen, "depth=x", m), std::invalid_argument);
  EXPECT_THROW(step::apply_override(chosen, "colour=red", m), std::invalid_argument);
  EXPECT_THROW(step::apply_override(chosen, "depth=3", m), std::invalid_argument);  // not a value of the knob
  EXPECT_THROW(step::apply_override(chosen, "depth=1,depth=2", m), std::invalid_argument);
}

TEST(StepPlan, PlanSpecReachesPlanFor) {
  const Call m = call_of(16, 32, Layout::vk, DType::f32, 4);
  EXPECT_EQ(step::plan_for(m, "kernel=mma").kernel, Kernel::mma);
  EXPECT_THROW(step::plan_for(m, "kernel=decode_kv"), std::invalid_argument);  // cannot run this call
  EXPECT_EQ(step::plan_for(m, ""), step::choose(m));
}

TEST(StepPlan, KnobsAreOneTableTheVariantsDeclare) {
  std::vector<std::string> names;
  for (const auto& k : step::knobs()) {
    names.push_back(k.name);
    EXPECT_FALSE(k.values.empty()) << k.name;
    EXPECT_FALSE(k.help.empty()) << k.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"kernel", "depth", "tiles", "form", "read_only"}));
  for (const char* name : {"decode/fast", "mtp/fast"}) {
    const Variant* v = Registry::instance().find(name);
    ASSERT_NE(v, nullptr) << name;
    EXPECT_EQ(v->knobs.size(), step::knobs().size()) << name;
    ASSERT_TRUE(v->check_plan) << name;
    EXPECT_EQ(v->check_plan("kernel=mma,form=bf16"), "") << name;
    EXPECT_NE(v->check_plan("kernel=warp9").find("kernel"), std::string::npos) << name;
    EXPECT_NE(v->check_plan("colour=red").find("unknown knob 'colour'"), std::string::npos) << name;
    EXPECT_NE(v->check_plan("depth"), "") << name;
  }
}

TEST(StepPlan, ShapesThatCannotRunThePlanAreSkips) {
  Shape s;
  s.op = OpKind::mtp, s.batch = 16, s.tokens = 4, s.h_qk = 16, s.h_v = 32, s.dk = s.dv = 128;
  s.plan = "kernel=mma";
  EXPECT_EQ(step::supports(s), "");
  EXPECT_NE(Registry::instance().find("mtp/fast")->plan(s).find("mma form=bf16"), std::string::npos);
  s.plan = "kernel=decode_kv";  // a valid spec this call cannot run
  EXPECT_NE(step::supports(s).find("decode_kv takes"), std::string::npos) << step::supports(s);
  s.plan = "kernel=mma";
  s.layout = Layout::kv;
  EXPECT_NE(step::supports(s), "");
}

TEST(StepPlan, DescribeNamesTheKernelTileAndRegisterBudget) {
  EXPECT_EQ((Plan{Kernel::mma_pipelined, 0, 1, MmaForm::tf32, false}).describe(DType::f32),
            "mma_pipelined form=tf32 (1 warp/block, 11 warps/SM, <= 184 registers)");
  EXPECT_EQ((Plan{Kernel::read_only_vk, 4, 4}).describe(DType::bf16),
            "read_only_vk depth=4 tiles=4 (1 warp/block, 20 warps/SM, <= 96 registers)");
  EXPECT_EQ((Plan{Kernel::tokens_kv, 2}).describe(DType::f32), "tokens_kv depth=2 (4 warps/block, <= 255 registers)");
  EXPECT_EQ(step::register_budget(16), 128);
  EXPECT_EQ(step::register_budget(12), 168);
}

TEST(StepPlan, VariantsRecordThePlanOfTheirShape) {
  Shape s;
  s.op = OpKind::mtp, s.batch = 128, s.tokens = 7, s.h_qk = 16, s.h_v = 32, s.dk = s.dv = 128;
  for (const char* name : {"decode/fast", "mtp/fast"}) {
    const Variant* v = Registry::instance().find(name);
    ASSERT_NE(v, nullptr) << name;
    EXPECT_EQ(v->backend, Backend::cuda);
    EXPECT_EQ(v->min_arch, 80);
    EXPECT_FALSE(v->tolerances.empty());
    ASSERT_TRUE(v->plan) << name;
  }
  EXPECT_EQ(Registry::instance().find("mtp/fast")->plan(s), step::choose(Call::of(s)).describe(DType::f32));
  EXPECT_NE(Registry::instance().find("mtp/fast")->plan(s).find("mma_pipelined form=tf32"), std::string::npos);
}

TEST(StepPlan, SupportsOnlyWhatTheKernelsHandle) {
  Shape s;
  s.op = OpKind::mtp, s.batch = 2, s.tokens = 64, s.h_qk = 2, s.h_v = 4, s.dk = 128, s.dv = 64;
  s.state_dtype = DType::bf16;
  EXPECT_EQ(step::supports(s), "");
  Shape f16 = s;
  f16.input_dtype = DType::f16;
  EXPECT_NE(step::supports(f16), "");
  Shape k64 = s;
  k64.dk = 64;
  EXPECT_NE(step::supports(k64), "");
  Shape v40 = s;
  v40.dv = 40;
  EXPECT_NE(step::supports(v40), "");
  Shape t65 = s;
  t65.tokens = 65;
  EXPECT_NE(step::supports(t65), "");
}

}  // namespace
}  // namespace gdn

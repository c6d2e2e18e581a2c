// decode/fast and mtp/fast beyond the shared variant suite (test_variants.cpp runs only the plan
// step::choose picks): every CUDA-core tile depth of both layouts and pool dtypes, and the
// tensor-core kernels, against the fp64 reference, on token counts that need several staging
// rounds and gates past lane 31, padding rows with the cache, strong decay (the lazy-decay fold)
// and 32-bit indices. GPU cases skip without a device; the routing rules are tested on the CPU
// (tests/cpu/test_step_plan.cpp).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "step/step.h"
#include "core/errors.h"
#include "core/op.h"
#include "core/registry.h"
#include "reference/reference.h"
#include "run/backend.h"
#include "run/problem.h"
#include "run/verify.h"
#include "gpu_suite.h"

namespace gdn {
namespace {

constexpr uint64_t kSeed = 77031;

using test::step_shape;

struct DepthCase {
  std::string label;
  Shape shape;
  int depth;
  bool mma = false;  // the tensor-core kernel (depth unused)
};

// Every depth step::check accepts for the op: bf16 kv decode also has depth 4 (decode_kv).
std::vector<int> depths_of(OpKind op, Layout layout, DType state) {
  if (layout == Layout::vk) return {1, 2, 4};
  return state == DType::f32 || op == OpKind::decode ? std::vector<int>{2, 4} : std::vector<int>{2};
}

std::vector<DepthCase> depth_cases() {
  std::vector<DepthCase> out;
  for (Layout layout : {Layout::vk, Layout::kv})
    for (DType state : {DType::f32, DType::bf16}) {
      const std::string tag = std::string(to_string(layout)) + "_" + std::string(to_string(state));
      std::vector<std::pair<std::string, Shape>> shapes;
      Shape d = step_shape(OpKind::decode, 5, 1, 2, 8, layout, state);  // padded rows, i32, raw gate
      d.gate = GateForm::raw;
      d.index_dtype = DType::i32;
      d.indices = IndexPattern::padded;
      d.pool = 12;
      shapes.push_back({"decode_raw_padded_i32", d});
      Shape e = step_shape(OpKind::decode, 3, 1, 4, 8, layout, state);  // log gate, strong decay, V = 64
      e.dv = 64;
      e.inputs = InputDist::strong_decay;
      e.pool = 9;
      shapes.push_back({"decode_log_strong_decay_v64", e});
      Shape m = step_shape(OpKind::mtp, 3, 20, 2, 4, layout, state);  // two staging rounds, V = 64
      m.dv = 64;
      m.cache_intermediate = true;
      m.indices = IndexPattern::padded;
      m.pool = 7;
      shapes.push_back({"mtp_t20_cache_padded_v64", m});
      Shape r = step_shape(OpKind::mtp, 2, 40, 1, 4, layout, state);  // gates of tokens >= 32
      r.dv = 32;
      r.cache_intermediate = true;
      r.update_state = false;
      r.inputs = InputDist::strong_decay;
      shapes.push_back({"mtp_t40_cache_read_only_strong_decay_v32", r});
      Shape u = step_shape(OpKind::mtp, 6, 6, 2, 8, layout, state);  // no cache: one staging round
      u.gate = GateForm::raw;
      u.indices = IndexPattern::padded;
      u.pool = 10;
      shapes.push_back({"mtp_t6_raw_padded", u});
      Shape rb = step_shape(OpKind::mtp, 40, 4, 2, 8, layout, state);  // rollback: start from the cache
      rb.cache_intermediate = true;
      rb.rollback = true;
      rb.indices = IndexPattern::padded;
      rb.pool = 48;
      shapes.push_back({"mtp_t4_rollback_padded", rb});
      Shape rr = step_shape(OpKind::mtp, 12, 10, 2, 4, layout, state);  // two staging rounds, read only
      rr.cache_intermediate = true;
      rr.rollback = true;
      rr.update_state = false;
      rr.gate = GateForm::raw;
      shapes.push_back({"mtp_t10_rollback_read_only_raw", rr});
      // update off without the cache, T <= 4: the vk read-only kernel (dots with the starting
      // state, Gram table; at depth 4 four tiles per warp where V allows, V = 96 two, V = 48
      // one); strong decay, raw gate + i32 + padding, beta = 1 without l2norm, random slots.
      Shape ro = step_shape(OpKind::mtp, 6, 4, 2, 8, layout, state);
      ro.update_state = false;
      ro.inputs = InputDist::strong_decay;
      ro.indices = IndexPattern::padded;
      ro.pool = 10;
      shapes.push_back({"mtp_t4_read_only_padded_strong_decay", ro});
      Shape ro3 = step_shape(OpKind::mtp, 5, 3, 2, 4, layout, state);
      ro3.update_state = false;
      ro3.dv = 64;
      ro3.gate = GateForm::raw;
      ro3.index_dtype = DType::i32;
      ro3.indices = IndexPattern::padded;
      ro3.pool = 9;
      shapes.push_back({"mtp_t3_read_only_raw_i32_padded_v64", ro3});
      Shape ro2 = step_shape(OpKind::mtp, 3, 2, 4, 8, layout, state);
      ro2.update_state = false;
      ro2.l2norm = false;
      ro2.inputs = InputDist::beta_one;
      shapes.push_back({"mtp_t2_read_only_beta_one_no_l2norm", ro2});
      Shape ro4 = step_shape(OpKind::mtp, 4, 4, 2, 4, layout, state);
      ro4.update_state = false;
      ro4.inputs = InputDist::no_decay;
      ro4.dv = 48;
      shapes.push_back({"mtp_t4_read_only_no_decay_v48", ro4});
      Shape ro96 = step_shape(OpKind::mtp, 5, 4, 2, 4, layout, state);
      ro96.update_state = false;
      ro96.dv = 96;
      ro96.indices = IndexPattern::random;
      ro96.pool = 12;
      shapes.push_back({"mtp_t4_read_only_random_v96", ro96});
      for (const auto& [label, s] : shapes)
        for (int depth : depths_of(s.op, layout, state))
          out.push_back({label + "_" + tag + "_depth" + std::to_string(depth), s, depth});
      if (layout != Layout::vk) continue;
      // The tensor-core kernel (vk, no cache): chunks of 8 with a remainder, several staging
      // rounds, gates past lane 31, update off, strong decay, raw gate, padding, V = 64 / 32.
      Shape m1 = step_shape(OpKind::mtp, 5, 9, 2, 8, layout, state);
      m1.indices = IndexPattern::padded;
      m1.pool = 8;
      m1.inputs = InputDist::strong_decay;
      Shape m2 = step_shape(OpKind::mtp, 3, 20, 2, 4, layout, state);
      m2.dv = 64;
      m2.gate = GateForm::raw;
      m2.index_dtype = DType::i32;
      Shape m3 = step_shape(OpKind::mtp, 2, 40, 1, 4, layout, state);
      m3.dv = 32;
      m3.update_state = false;
      // T = 8 with 4 x 8 (row, value head) pairs: the plain kernel (kMmaPipelinedMinHeads).
      Shape m4 = step_shape(OpKind::mtp, 4, 8, 4, 8, layout, state);
      m4.l2norm = false;
      m4.inputs = InputDist::no_decay;
      // T <= 8, fp32: the pipelined (persistent) kernel; 200 x 16 x 8 tiles are many per warp.
      Shape m5 = step_shape(OpKind::mtp, 200, 8, 4, 16, layout, state);
      m5.indices = IndexPattern::padded;
      m5.pool = 240;
      m5.inputs = InputDist::strong_decay;
      // T = 6 and 7 (routed to these kernels for fp32 pools): a chunk of 6 on the pipelined
      // kernel with padding and a raw gate, a chunk of 7 on the plain one.
      Shape m6 = step_shape(OpKind::mtp, 40, 6, 4, 16, layout, state);
      m6.gate = GateForm::raw;
      m6.indices = IndexPattern::padded;
      m6.pool = 48;
      Shape m7 = step_shape(OpKind::mtp, 3, 7, 2, 8, layout, state);
      m7.inputs = InputDist::beta_one;
      // Update off within one chunk: the READ_ONLY builds (no state update), pipelined for fp32
      // from 129 (row, value head) pairs, plain below and for bf16.
      Shape r4 = step_shape(OpKind::mtp, 40, 4, 4, 16, layout, state);
      r4.update_state = false;
      r4.inputs = InputDist::strong_decay;
      r4.indices = IndexPattern::padded;
      r4.pool = 48;
      Shape r2 = step_shape(OpKind::mtp, 3, 2, 2, 8, layout, state);
      r2.update_state = false;
      r2.gate = GateForm::raw;
      r2.inputs = InputDist::beta_one;
      r2.dv = 64;
      Shape r8 = step_shape(OpKind::mtp, 40, 8, 4, 16, layout, state);
      r8.update_state = false;
      r8.l2norm = false;
      r8.index_dtype = DType::i32;
      Shape r5 = step_shape(OpKind::mtp, 40, 5, 4, 16, layout, state);
      r5.update_state = false;
      r5.gate = GateForm::raw;
      r5.inputs = InputDist::no_decay;
      // From kMmaTf32FromHeads (row, value head) pairs: the pipelined kernel's TF32 build (fp32);
      // T = 8 from kMmaPlainFromHeads: the plain kernel; T = 5 below kMmaPipelinedMinHeads: plain.
      Shape m8 = step_shape(OpKind::mtp, 260, 7, 4, 16, layout, state);
      m8.gate = GateForm::raw;
      m8.indices = IndexPattern::padded;
      m8.pool = 300;
      Shape m9 = step_shape(OpKind::mtp, 520, 8, 2, 16, layout, state);
      m9.inputs = InputDist::strong_decay;
      m9.indices = IndexPattern::random;
      Shape m10 = step_shape(OpKind::mtp, 2, 5, 2, 8, layout, state);
      m10.inputs = InputDist::beta_one;
      for (const auto& [label, s] : std::vector<std::pair<std::string, Shape>>{
               {"mtp_t7_b260_raw_padded", m8}, {"mtp_t8_b520_strong_decay_random", m9},
               {"mtp_t5_b2_beta_one", m10}, {"mtp_t9_padded_strong_decay", m1}, {"mtp_t20_raw_i32_v64", m2},
               {"mtp_t40_read_only_v32", m3}, {"mtp_t8_no_l2norm_no_decay", m4},
               {"mtp_t8_b200_padded_strong_decay", m5}, {"mtp_t6_b40_raw_padded", m6},
               {"mtp_t7_beta_one", m7}, {"mtp_t4_b40_read_only_padded_strong_decay", r4},
               {"mtp_t2_read_only_raw_beta_one_v64", r2}, {"mtp_t8_b40_read_only_i32_no_l2norm", r8},
               {"mtp_t5_b40_read_only_raw_no_decay", r5}})
        out.push_back({label + "_" + tag + "_mma", s, 0, true});
    }
  return out;
}

class FastDepths : public test::CudaSuite<DepthCase> {};

TEST_P(FastDepths, MatchesReference) {
  const DepthCase& c = GetParam();
  ASSERT_EQ(op_def(c.shape.op).validate(c.shape), "") << c.shape.key();
  ASSERT_EQ(step::supports(c.shape), "") << c.shape.key();
  const step::Call call = step::Call::of(c.shape);
  const step::Plan plan = c.mma ? step::mma_plan(call) : step::cuda_core_plan(call, c.depth);
  ASSERT_EQ(step::check(plan, call), "") << plan.describe(c.shape.state_dtype);
  if (!backend_) GTEST_SKIP() << "CUDA backend unavailable: " << why_no_device_;
  const Variant* v = Registry::instance().find(c.shape.op == OpKind::mtp ? "mtp/fast" : "decode/fast");
  ASSERT_NE(v, nullptr);
  if (auto why = backend_->can_run(*v); !why.empty()) GTEST_SKIP() << v->name << " cannot run here: " << why;

  Problem p(c.shape, *backend_, kSeed);
  p.reset_device();
  step::launch(c.shape, p.device(), plan, backend_->launch_context().stream);
  backend_->synchronize();
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  p.download();
  const Verification r = check_outputs(p, effective_tolerances(c.shape, step::tolerances()), {}, 0);
  EXPECT_FALSE(r.checks.empty());
  EXPECT_TRUE(r.pass) << c.label << "\n" << test::describe(r);
}

INSTANTIATE_TEST_SUITE_P(Cuda, FastDepths, testing::ValuesIn(depth_cases()),
                         [](const testing::TestParamInfo<DepthCase>& info) { return info.param.label; });

TEST(FastStep, RefusesPlansNoKernelRuns) {
  Shape s = step_shape(OpKind::decode, 1, 1, 16, 32, Layout::vk, DType::f32);
  EXPECT_THROW(step::launch(s, TensorSet{}, step::Plan{step::Kernel::decode_vk, 3}, nullptr), Error);
  s.layout = Layout::kv;
  EXPECT_THROW(step::launch(s, TensorSet{}, step::Plan{step::Kernel::tokens_kv, 1}, nullptr), Error);
}

}  // namespace
}  // namespace gdn

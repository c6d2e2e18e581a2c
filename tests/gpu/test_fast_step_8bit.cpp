// decode/fast and mtp/fast on 8-bit pools (fp8e4m3, int8: docs/state-8bit.md;
// decode_vk_8bit_kernel and step_vk_8bit_kernel): every tile depth (decode's 8 included) against
// the quantized fp64 reference on padding rows, the raw gate, stress inputs, 32-bit indices,
// byte offsets past 2^31, and for mtp the cache, rollback, read-only pools and several staging
// rounds; the launch captured into a CUDA graph giving the same bits as a direct launch; and
// 1000 repeats from the same inputs bit-identical. The tensor-core build (step_vk_mma_8bit_kernel,
// depth 0 below) on update calls without the cache: one and several chunks and staging rounds,
// padding rows, the raw gate, stress inputs and slots past 2^31 bytes. Each case skips without a
// device; the routing and ptxas budgets are checked on the CPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/fnv.h"
#include "core/op.h"
#include "core/registry.h"
#include "gpu_suite.h"
#include "run/problem.h"
#include "run/verify.h"
#include "step/step.h"

namespace gdn {
namespace {

constexpr uint64_t kSeed = 90817;

using test::step_shape;

struct Q8Case {
  std::string label;
  Shape shape;
  int depth;
};

std::vector<Q8Case> q8_cases() {
  std::vector<Q8Case> out;
  for (DType d : {DType::fp8e4m3, DType::i8}) {
    const std::string tag{to_string(d)};
    for (int depth : {1, 2, 4, 8}) {  // 8: the decode tile only
      Shape plain = step_shape(OpKind::decode, 33, 1, 16, 32, Layout::vk, d);
      Shape padded = step_shape(OpKind::decode, 260, 1, 4, 16, Layout::vk, d);
      padded.gate = GateForm::raw, padded.indices = IndexPattern::padded, padded.pool = 300;
      Shape stress = step_shape(OpKind::decode, 64, 1, 2, 8, Layout::vk, d);
      stress.inputs = InputDist::strong_decay, stress.l2norm = false, stress.index_dtype = DType::i32;
      stress.indices = IndexPattern::random, stress.pool = 100;
      Shape beta_one = step_shape(OpKind::decode, 16, 1, 2, 8, Layout::vk, d);
      beta_one.inputs = InputDist::beta_one, beta_one.dv = 64;
      for (const auto& [label, s] : std::vector<std::pair<std::string, Shape>>{
               {"b33", plain}, {"b260_raw_padded", padded}, {"b64_strong_decay_no_l2norm_i32", stress},
               {"b16_beta_one_v64", beta_one}})
        out.push_back({label + "_" + tag + "_depth" + std::to_string(depth), s, depth});
      if (depth == 8) continue;
      Shape m4 = step_shape(OpKind::mtp, 64, 4, 16, 32, Layout::vk, d);  // the T = 4, no cache
      Shape cache = step_shape(OpKind::mtp, 40, 4, 4, 16, Layout::vk, d);
      cache.cache_intermediate = true, cache.indices = IndexPattern::padded, cache.pool = 50;
      Shape rollback = step_shape(OpKind::mtp, 24, 9, 2, 8, Layout::vk, d);  // two staging rounds
      rollback.cache_intermediate = true, rollback.rollback = true, rollback.gate = GateForm::raw;
      rollback.indices = IndexPattern::padded, rollback.pool = 30;
      Shape read_only = step_shape(OpKind::mtp, 40, 3, 2, 8, Layout::vk, d);
      read_only.update_state = false, read_only.inputs = InputDist::strong_decay;
      Shape no_decay = step_shape(OpKind::mtp, 16, 16, 2, 4, Layout::vk, d);
      no_decay.inputs = InputDist::no_decay, no_decay.cache_intermediate = true, no_decay.l2norm = false;
      for (const auto& [label, s] : std::vector<std::pair<std::string, Shape>>{
               {"mtp_t4_b64", m4}, {"mtp_t4_b40_cache_padded", cache}, {"mtp_t9_rollback_raw_padded", rollback},
               {"mtp_t3_read_only_strong_decay", read_only}, {"mtp_t16_cache_no_decay_no_l2norm", no_decay}})
        out.push_back({label + "_" + tag + "_depth" + std::to_string(depth), s, depth});
    }
    // The tensor-core build: T = 2..64 (one chunk, several chunks, several staging rounds).
    for (int tokens : {2, 3, 4, 5, 8, 9, 16, 17, 64}) {
      Shape m = step_shape(OpKind::mtp, tokens > 16 ? 12 : 40, tokens, 4, 16, Layout::vk, d);
      m.indices = IndexPattern::padded, m.pool = 50;
      out.push_back({"mma_t" + std::to_string(tokens) + "_padded_" + tag, m, 0});
    }
    Shape m4 = step_shape(OpKind::mtp, 64, 4, 16, 32, Layout::vk, d);  // the T = 4, no cache
    out.push_back({"mma_t4_b64_" + tag, m4, 0});
    Shape raw = step_shape(OpKind::mtp, 33, 6, 2, 8, Layout::vk, d);
    raw.gate = GateForm::raw, raw.inputs = InputDist::strong_decay, raw.l2norm = false, raw.index_dtype = DType::i32;
    raw.indices = IndexPattern::random, raw.pool = 100;
    out.push_back({"mma_t6_raw_strong_decay_no_l2norm_i32_" + tag, raw, 0});
    Shape no_decay = step_shape(OpKind::mtp, 16, 12, 2, 4, Layout::vk, d);
    no_decay.inputs = InputDist::no_decay, no_decay.dv = 64;
    out.push_back({"mma_t12_no_decay_v64_" + tag, no_decay, 0});
    Shape beta_one = step_shape(OpKind::mtp, 16, 4, 2, 8, Layout::vk, d);
    beta_one.inputs = InputDist::beta_one;
    out.push_back({"mma_t4_beta_one_" + tag, beta_one, 0});
    Shape mtp_high = step_shape(OpKind::mtp, 64, 4, 8, 16, Layout::vk, d);
    mtp_high.indices = IndexPattern::high, mtp_high.pool = 9000;
    out.push_back({"mma_t4_high_slots_past_2g_" + tag, mtp_high, 0});
    // Slots at the end of a pool of 9000 x 16 heads: code offsets past 2^31 bytes (64-bit math).
    Shape high = step_shape(OpKind::decode, 256, 1, 8, 16, Layout::vk, d);
    high.indices = IndexPattern::high, high.pool = 9000;
    out.push_back({"b256_high_slots_past_2g_" + tag, high, 4});
    out.push_back({"b256_high_slots_past_2g_" + tag + "_depth8", high, 8});
  }
  return out;
}

// depth 0: the tensor-core build (the mtp plan of update calls without the cache from 3 tokens).
step::Plan plan_at(const Shape& s, int depth) {
  const step::Call c = step::Call::of(s);
  return depth == 0 ? step::mma_plan(c) : step::cuda_core_plan(c, depth);
}
step::Kernel kernel_of(const Q8Case& c) {
  if (c.depth == 0) return step::Kernel::mma;
  return c.shape.op == OpKind::mtp ? step::Kernel::tokens_vk : step::Kernel::decode_vk;
}

class FastStep8bit : public test::CudaSuite<Q8Case> {
 protected:
  // Why this machine cannot run the fast variants ("" when it can).
  static std::string no_device() {
    if (!backend_) return "CUDA backend unavailable: " + why_no_device_;
    for (const char* name : {"decode/fast", "mtp/fast"}) {
      const Variant* v = Registry::instance().find(name);
      if (v == nullptr) return std::string(name) + " is not registered";
      if (auto why = backend_->can_run(*v); !why.empty()) return std::string(name) + " cannot run here: " + why;
    }
    return "";
  }
  // The outputs a launch left (o, pool codes, pool scales) as one hash.
  static uint64_t outputs_hash(Problem& p) {
    p.download();
    uint64_t h = kFnvOffsetBasis;
    for (const char* name : {"o", "pool", "pool_scale", "intermediate", "intermediate_scale"}) {
      if (!p.results().has(name)) continue;
      const Tensor& t = p.results().at(name);
      h = fnv1a(std::string_view(static_cast<const char*>(t.data), t.bytes()), h);
    }
    return h;
  }
};

TEST_P(FastStep8bit, MatchesTheQuantizedReference) {
  const Q8Case& c = GetParam();
  ASSERT_EQ(op_def(c.shape.op).validate(c.shape), "") << c.shape.key();
  ASSERT_EQ(step::supports(c.shape), "") << c.shape.key();
  const step::Plan plan = plan_at(c.shape, c.depth);
  ASSERT_EQ(plan.kernel, kernel_of(c));
  ASSERT_EQ(step::check(plan, step::Call::of(c.shape)), "") << plan.describe(c.shape.state_dtype);
  if (const std::string why = no_device(); !why.empty()) GTEST_SKIP() << why;
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

INSTANTIATE_TEST_SUITE_P(Cuda, FastStep8bit, testing::ValuesIn(q8_cases()),
                         [](const testing::TestParamInfo<Q8Case>& info) { return info.param.label; });

class FastStep8bitRuns : public FastStep8bit {};

TEST_P(FastStep8bitRuns, GraphCaptureAndThousandRepeatsAreBitIdentical) {
  const Q8Case& c = GetParam();
  if (const std::string why = no_device(); !why.empty()) GTEST_SKIP() << why;
  Problem p(c.shape, *backend_, kSeed);
  const step::Plan plan = plan_at(c.shape, c.depth);
  auto* stream = static_cast<cudaStream_t>(backend_->launch_context().stream);
  p.reset_device();
  step::launch(c.shape, p.device(), plan, stream);
  const uint64_t direct = outputs_hash(p);

  cudaStream_t capture = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking), cudaSuccess);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(capture, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  step::launch(c.shape, p.device(), plan, capture);
  ASSERT_EQ(cudaStreamEndCapture(capture, &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  p.reset_device();
  ASSERT_EQ(cudaGraphLaunch(exec, capture), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(capture), cudaSuccess);
  EXPECT_EQ(outputs_hash(p), direct) << "the graph replay differs from the direct launch";
  cudaGraphExecDestroy(exec), cudaGraphDestroy(graph), cudaStreamDestroy(capture);

  for (int i = 0; i < 1000; ++i) {
    p.reset_device();
    step::launch(c.shape, p.device(), plan, stream);
    const uint64_t h = outputs_hash(p);
    ASSERT_EQ(h, direct) << "repeat " << i << " differs";
  }
}

// Small shapes: 1000 resets of the pool stay quick.
std::vector<Q8Case> run_cases() {
  std::vector<Q8Case> out;
  for (DType d : {DType::fp8e4m3, DType::i8}) {
    Shape s = step_shape(OpKind::decode, 64, 1, 4, 8, Layout::vk, d);
    s.indices = IndexPattern::padded, s.pool = 80;
    out.push_back({"b64_padded_" + std::string(to_string(d)), s, 2});
    out.push_back({"b64_padded_depth8_" + std::string(to_string(d)), s, 8});
    Shape m = step_shape(OpKind::mtp, 32, 4, 4, 8, Layout::vk, d);
    m.indices = IndexPattern::padded, m.pool = 40, m.cache_intermediate = true, m.rollback = true;
    out.push_back({"mtp_t4_b32_rollback_padded_" + std::string(to_string(d)), m, 4});
    Shape mma = step_shape(OpKind::mtp, 32, 4, 4, 8, Layout::vk, d);
    mma.indices = IndexPattern::padded, mma.pool = 40;
    out.push_back({"mma_t4_b32_padded_" + std::string(to_string(d)), mma, 0});
    Shape mma9 = step_shape(OpKind::mtp, 16, 9, 4, 8, Layout::vk, d);  // two chunks
    mma9.indices = IndexPattern::padded, mma9.pool = 20;
    out.push_back({"mma_t9_b16_padded_" + std::string(to_string(d)), mma9, 0});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Cuda, FastStep8bitRuns, testing::ValuesIn(run_cases()),
                         [](const testing::TestParamInfo<Q8Case>& info) { return info.param.label; });

}  // namespace
}  // namespace gdn

// prefill/sm90 with checkpoints (docs/method.md 2.4) on a Hopper GPU: every schedule and scan form
// a plan reaches (two_pass at each block_v, context-parallel splits, fused) verified against the
// fp64 reference with every written checkpoint compared and every other slot bit-identical; every
// 64, every 256 and 1024 and explicit lists, -1 entries, f32 and bf16 pools, both layouts, stress
// inputs, slots past 2^31 elements. Then: o and the final states bit-identical with and without
// checkpoints (the checkpoint kernels only add stores), 1000 launches bit-identical, a CUDA-graph
// capture replayed, and a prompt split at a checkpoint continuing to the unsplit prompt. Skips
// without a Hopper GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "checkpoint_continuation.h"
#include "core/registry.h"
#include "gpu/graph_replay.h"
#include "gpu_suite.h"
#include "run/problem.h"
#include "run/runner.h"
#include "run/verify.h"
#include "test_support.h"

namespace gdn {
namespace {

constexpr uint64_t kSeed = 4501;

// Every plan form the checkpoint kernels come in.
const char* const kPlans[] = {"",         "cp=off,block_v=32", "cp=off,block_v=64", "cp=off,block_v=128",
                              "cp=2",     "cp=1,cp_block_v=32", "cp=2,block_v=128", "schedule=fused"};

Shape checkpointed(std::vector<int64_t> lens, int h_qk, int h_v, Layout layout, IndexPattern ip, DType state,
                   int64_t every, std::vector<std::vector<int64_t>> at = {}) {
  Shape s = test::prefill(std::move(lens), h_qk, h_v, layout);
  s.checkpoint_every = every, s.checkpoint_at = std::move(at);
  s.indices = ip, s.state_dtype = state;
  int64_t needed = int64_t(s.seqlens.size());
  for (size_t n = 0; n < s.seqlens.size(); ++n)
    needed += every > 0 ? s.seqlens[n] / every : int64_t(s.checkpoint_at.at(n).size());
  s.pool = needed + 7;
  return s;
}

std::vector<Shape> shapes() {
  return {
      // 1 token, a partial chunk, one chunk, ragged, an empty sequence, 11 chunks: every 64.
      checkpointed({1, 17, 64, 130, 200, 0, 700}, 2, 4, Layout::kv, IndexPattern::random, DType::f32, 64),
      // Explicit lists with -1 entries (padded), a bf16 pool, vk.
      checkpointed({700, 0, 129, 64, 300}, 2, 8, Layout::vk, IndexPattern::padded, DType::bf16, 0,
                   {{64, 128, 192, 640}, {}, {128}, {64}, {64, 256}}),
      // Every 1024, the final position included (1024 and 2048 of 2100's 2048 and 1024's end).
      checkpointed({2100, 1024, 5}, 1, 2, Layout::vk, IndexPattern::high, DType::f32, 1024),
      // Stress inputs over many chunks: no decay keeps every error; strong decay underflows.
      [] {
        Shape s = checkpointed({2000, 70}, 1, 2, Layout::kv, IndexPattern::random, DType::f32, 256);
        s.inputs = InputDist::no_decay;
        return s;
      }(),
      [] {
        Shape s = checkpointed({700, 33}, 1, 2, Layout::vk, IndexPattern::padded, DType::bf16, 128);
        s.inputs = InputDist::strong_decay, s.gate = GateForm::raw;
        return s;
      }(),
      // int32 indices (one word an entry) with a bf16 kv pool, and an explicit list of several
      // positions a sequence, which the fused kernel's cursor reads one checkpoint ahead.
      [] {
        Shape s = checkpointed({1300, 640, 64}, 2, 4, Layout::kv, IndexPattern::padded, DType::bf16, 0,
                               {{64, 320, 384, 1024, 1280}, {128, 192, 256, 640}, {64}});
        s.index_dtype = DType::i32;
        return s;
      }(),
  };
}

class Sm90Checkpoints : public test::CudaSuite<int> {
 protected:
  const Variant* variant() const { return Registry::instance().find("prefill/sm90"); }
  std::string cannot_run() const {
    if (!backend_) return "CUDA backend unavailable: " + why_no_device_;
    return backend_->can_run(*variant());
  }
};

using Bytes = std::vector<unsigned char>;
Bytes bytes_of(const Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.data);
  return Bytes(p, p + t.bytes());
}

TEST_F(Sm90Checkpoints, EverySchedulePassesTheReference) {
  const Variant* v = variant();
  ASSERT_NE(v, nullptr);
  std::vector<Shape> all;
  for (const Shape& base : shapes())
    for (const char* plan : kPlans) {
      all.push_back(base);
      all.back().plan = plan;
      EXPECT_EQ(v->supports(all.back()), "") << all.back().key() << " plan '" << plan << "'";
    }
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  for (const Shape& s : all) {
    SCOPED_TRACE(s.key() + " plan '" + s.plan + "'");
    const Verification r = verify_variant(*v, s, *backend_, kSeed);
    EXPECT_TRUE(r.pass) << v->plan(s) << "\n" << test::describe(r);
    bool compared = false;
    for (const auto& c : r.checks) compared = compared || (c.tensor == "checkpoints" && c.checked > 0);
    EXPECT_TRUE(compared) << "no checkpoint was compared";
  }
}

// The checkpoint kernels add stores and nothing else: o and every slot a sequence owns come out
// with the same bits as without checkpoints.
TEST_F(Sm90Checkpoints, OutputsAndFinalStatesKeepTheirBits) {
  const Variant* v = variant();
  ASSERT_NE(v, nullptr);
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  for (const char* plan : kPlans) {
    Shape with = shapes()[0];
    with.plan = plan;
    Shape without = with;
    without.checkpoint_every = 0;
    SCOPED_TRACE(std::string("plan '") + plan + "'");
    Problem p(with, *backend_, kSeed), q(without, *backend_, kSeed);
    for (Problem* x : {&p, &q}) {
      x->reset_device();
      v->launch(x->shape(), x->device(), backend_->launch_context());
      x->download();
    }
    EXPECT_TRUE(bytes_of(p.results().at("o")) == bytes_of(q.results().at("o")));
    const Tensor &idx = p.inputs().at("indices"), &pa = p.results().at("pool"), &pb = q.results().at("pool");
    const size_t slot = pa.bytes() / size_t(with.pool_slots());
    for (int64_t n = 0; n < int64_t(with.seqlens.size()); ++n) {
      const int64_t s = slot_at(idx.data, idx.spec.dtype, n);
      if (s < 0) continue;
      const auto* a = static_cast<const unsigned char*>(pa.data) + size_t(s) * slot;
      const auto* b = static_cast<const unsigned char*>(pb.data) + size_t(s) * slot;
      EXPECT_EQ(std::memcmp(a, b, slot), 0) << "final state of sequence " << n;
    }
  }
}

TEST_F(Sm90Checkpoints, ThousandLaunchesAreBitIdentical) {
  const Variant* v = variant();
  ASSERT_NE(v, nullptr);
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  for (const char* plan : {"cp=off,block_v=64", "cp=2,block_v=128", "schedule=fused"}) {
    Shape s = checkpointed({777, 64, 1, 250}, 4, 16, Layout::kv, IndexPattern::padded, DType::f32, 64);
    s.plan = plan;
    SCOPED_TRACE(plan);
    Problem p(s, *backend_, kSeed);
    p.reset_device();
    v->launch(s, p.device(), backend_->launch_context());
    p.download();
    const Verification r = check_outputs(p, effective_tolerances(s, v->tolerances), {}, 0);
    ASSERT_TRUE(r.pass) << test::describe(r);
    const Bytes pool = bytes_of(p.results().at("pool")), o = bytes_of(p.results().at("o"));
    for (int i = 0; i < 1000; ++i) {
      p.reset_device();
      v->launch(s, p.device(), backend_->launch_context());
      p.download();
      ASSERT_TRUE(bytes_of(p.results().at("pool")) == pool) << "pool, launch " << i;
      ASSERT_TRUE(bytes_of(p.results().at("o")) == o) << "o, launch " << i;
    }
  }
}

TEST_F(Sm90Checkpoints, CapturedInAGraphAndReplayed) {
  const Variant* v = variant();
  ASSERT_NE(v, nullptr);
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  for (const char* plan : {"schedule=two_pass", "cp=1", "schedule=fused"}) {
    SCOPED_TRACE(plan);
    Shape s = shapes()[1];
    s.plan = plan;
    Problem p(s, *backend_, kSeed);
    p.reset_device();
    v->launch(s, p.device(), backend_->launch_context());
    p.download();
    const Bytes direct = bytes_of(p.results().at("pool"));
    test::replay_in_graph(*v, s, p, *backend_, 2, [&](int replay) {
      EXPECT_TRUE(bytes_of(p.results().at("pool")) == direct) << "pool, replay " << replay;
    });
    const Verification r = check_outputs(p, effective_tolerances(s, v->tolerances), {}, 0);
    EXPECT_TRUE(r.pass) << test::describe(r);
  }
}

// Checkpoint slots past 2^31 elements: 4200 bf16 slots of 32 heads x 128 x 128 are 2.2e9 elements,
// and the `high` pattern puts the sequences and their checkpoints in the top slots, so a 32-bit
// slot offset lands elsewhere (and the untouched check sees it).
TEST_F(Sm90Checkpoints, SlotsPast2To31Elements) {
  const Variant* v = variant();
  ASSERT_NE(v, nullptr);
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  for (const char* plan : {"cp=off", "schedule=fused"}) {
    Shape s = checkpointed({300, 130}, 16, 32, Layout::vk, IndexPattern::high, DType::bf16, 64);
    s.pool = 4200, s.plan = plan;
    ASSERT_GT(s.pool * s.h_v * s.dk * s.dv, int64_t(1) << 31);
    SCOPED_TRACE(s.key() + " plan '" + plan + "'");
    const Verification r = verify_variant(*v, s, *backend_, kSeed, 2);
    EXPECT_TRUE(r.pass) << test::describe(r);
  }
}

// The reverse (docs/method.md 2.4): the tail of a prompt run from its checkpoint's slot.
TEST_F(Sm90Checkpoints, APromptSplitAtACheckpointContinuesToTheUnsplitResult) {
  const Variant* v = variant();
  ASSERT_NE(v, nullptr);
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  for (const char* plan : {"", "cp=2", "schedule=fused"})
    for (const DType state : {DType::f32, DType::bf16})
      for (const int64_t p : {64, 1024}) {
        Shape s = checkpointed({1500}, 2, 8, Layout::vk, IndexPattern::random, state, 0, {{p}});
        s.plan = plan;
        SCOPED_TRACE(s.key() + " split at " + std::to_string(p));
        const auto c = test::continue_from_checkpoint(*v, *backend_, s, p, kSeed);
        const double tol = state == DType::bf16 ? 1e-2 : 5e-3;
        EXPECT_LT(c.o_rel, tol);
        EXPECT_LT(c.state_rel, tol);
      }
}

}  // namespace
}  // namespace gdn

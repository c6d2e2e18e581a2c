// prefill/sm90 on 8-bit pools (fp8e4m3, int8: docs/state-8bit.md; pool_8bit.cuh): the two-pass scan at each
// block_v, unsplit and context-parallel, against the quantised fp64 reference (the start state read from the
// slot as code x scale, the final state and every checkpoint written with a new scale per row), over GVA 1, 2
// and 4, ragged lengths with empty and one-token sequences, -1 padding rows, checkpoints every 64, every 256 and
// explicit lists, the raw gate, int32 indices and slots past 2^31 bytes; every slot no sequence or checkpoint
// names keeps its codes and scales bit for bit; 1000 launches give the same bits; a CUDA-graph capture replays
// to a direct launch's bits. The routing (never the fused schedule) is checked on the CPU
// (test_prefill_8bit.cpp). Skips without a Hopper GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "core/registry.h"
#include "core/slot.h"
#include "gpu/graph_replay.h"
#include "gpu_suite.h"
#include "run/problem.h"
#include "run/runner.h"
#include "run/verify.h"
#include "test_support.h"

namespace gdn {
namespace {

constexpr uint64_t kSeed = 4580;

// Every scan form an 8-bit pool's plan reaches: unsplit at each block_v, and context-parallel splits (the fixup
// widening the slot) on mma.sync and wgmma transition passes.
const char* const kPlans[] = {"",     "cp=off,block_v=32",  "cp=off,block_v=64", "cp=off,block_v=128",
                              "cp=2", "cp=1,cp_block_v=32", "cp=2,block_v=128"};

Shape pooled(std::vector<int64_t> lens, int h_qk, int h_v, DType state, IndexPattern ip, int64_t every,
             std::vector<std::vector<int64_t>> at = {}) {
  Shape s = test::prefill(std::move(lens), h_qk, h_v, Layout::vk);
  s.state_dtype = state, s.indices = ip;
  s.checkpoint_every = every, s.checkpoint_at = std::move(at);
  int64_t needed = int64_t(s.seqlens.size());
  for (size_t n = 0; n < s.seqlens.size(); ++n)
    needed += every > 0 ? s.seqlens[n] / every : s.checkpoint_at.empty() ? 0 : int64_t(s.checkpoint_at.at(n).size());
  s.pool = needed + 7;
  return s;
}

std::vector<Shape> shapes(DType d) {
  return {
      // GVA 1, no checkpoints: ragged, an empty and a one-token sequence, padding rows.
      pooled({1, 17, 64, 130, 0, 700}, 4, 4, d, IndexPattern::padded, 0),
      // GVA 2, every 64.
      pooled({1, 200, 0, 129, 640}, 2, 4, d, IndexPattern::random, 64),
      // GVA 4, explicit lists, int32 indices, the raw gate.
      [&] {
        Shape s = pooled({700, 0, 129, 64, 300}, 2, 8, d, IndexPattern::padded, 0,
                         {{64, 128, 192, 640}, {}, {128}, {64}, {64, 256}});
        s.index_dtype = DType::i32, s.gate = GateForm::raw;
        return s;
      }(),
      // Many chunks without decay (every error kept), every 256.
      [&] {
        Shape s = pooled({2000, 70}, 1, 2, d, IndexPattern::random, 256);
        s.inputs = InputDist::no_decay;
        return s;
      }(),
      // Strong decay: rows near zero (tiny scales, the zero row's all-zero codes).
      [&] {
        Shape s = pooled({700, 33}, 1, 2, d, IndexPattern::padded, 128);
        s.inputs = InputDist::strong_decay;
        return s;
      }(),
  };
}

class Sm90Prefill8bit : public test::CudaSuite<int> {
 protected:
  const Variant* variant() const { return Registry::instance().find("prefill/sm90"); }
  std::string cannot_run() const {
    if (!backend_) return "CUDA backend unavailable: " + why_no_device_;
    return backend_->can_run(*variant());
  }
  // One launch from fresh inputs, downloaded.
  void run_once(const Variant& v, const Shape& s, Problem& p) {
    p.reset_device();
    v.launch(s, p.device(), backend_->launch_context());
    p.download();
  }
};

using Bytes = std::vector<unsigned char>;
Bytes bytes_of(const Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.data);
  return Bytes(p, p + t.bytes());
}

// The slots a call may write: each sequence's own and its checkpoints' (entries >= 0).
std::set<int64_t> written_slots(const Problem& p) {
  std::set<int64_t> out;
  const Tensor& idx = p.inputs().at("indices");
  for (int64_t n = 0; n < int64_t(p.shape().seqlens.size()); ++n) out.insert(slot_at(idx.data, idx.spec.dtype, n));
  if (p.inputs().ptr<void>("checkpoint_indices") != nullptr) {
    const Tensor& ck = p.inputs().at("checkpoint_indices");
    for (int64_t e = 0; e < ck.numel(); ++e) out.insert(slot_at(ck.data, ck.spec.dtype, e));
  }
  return out;
}

TEST_F(Sm90Prefill8bit, PassesTheQuantisedReference) {
  const Variant* v = variant();
  ASSERT_NE(v, nullptr);
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  for (DType d : {DType::fp8e4m3, DType::i8})
    for (const Shape& base : shapes(d))
      for (const char* plan : kPlans) {
        Shape s = base;
        s.plan = plan;
        SCOPED_TRACE(s.key() + " plan '" + plan + "'");
        const Verification r = verify_variant(*v, s, *backend_, kSeed);
        EXPECT_TRUE(r.pass) << v->plan(s) << "\n" << test::describe(r);
        if (s.checkpoint_every > 0 || !s.checkpoint_at.empty()) {
          bool compared = false;
          for (const auto& c : r.checks) compared = compared || (c.tensor == "checkpoints" && c.checked > 0);
          EXPECT_TRUE(compared) << "no checkpoint was compared";
        }
      }
}

// Padding rows (-1) and slots nobody names: codes and scales keep their bits.
TEST_F(Sm90Prefill8bit, UnnamedSlotsKeepTheirBits) {
  const Variant* v = variant();
  ASSERT_NE(v, nullptr);
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  for (DType d : {DType::fp8e4m3, DType::i8}) {
    const Shape s = shapes(d)[2];
    Problem p(s, *backend_, kSeed);
    run_once(*v, s, p);
    const std::set<int64_t> written = written_slots(p);
    for (const char* name : {"pool", "pool_scale"}) {
      const Tensor &before = p.inputs().at(name), &after = p.results().at(name);
      const size_t slot = before.bytes() / size_t(s.pool_slots());
      int64_t kept = 0;
      for (int64_t k = 0; k < s.pool_slots(); ++k) {
        if (written.count(k)) continue;
        const auto* a = static_cast<const unsigned char*>(before.data) + size_t(k) * slot;
        const auto* b = static_cast<const unsigned char*>(after.data) + size_t(k) * slot;
        EXPECT_EQ(std::memcmp(a, b, slot), 0) << name << " slot " << k;
        ++kept;
      }
      EXPECT_GT(kept, 0) << name;
    }
  }
}

TEST_F(Sm90Prefill8bit, ThousandLaunchesAreBitIdentical) {
  const Variant* v = variant();
  ASSERT_NE(v, nullptr);
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  for (DType d : {DType::fp8e4m3, DType::i8})
    for (const char* plan : {"cp=off,block_v=64", "cp=2,block_v=128"}) {
      Shape s = pooled({777, 64, 1, 250}, 4, 16, d, IndexPattern::padded, 64);
      s.plan = plan;
      SCOPED_TRACE(std::string(to_string(d)) + " plan '" + plan + "'");
      Problem p(s, *backend_, kSeed);
      run_once(*v, s, p);
      const Verification r = check_outputs(p, effective_tolerances(s, v->tolerances), {}, 0);
      ASSERT_TRUE(r.pass) << test::describe(r);
      const Bytes pool = bytes_of(p.results().at("pool")), scales = bytes_of(p.results().at("pool_scale")),
                  o = bytes_of(p.results().at("o"));
      for (int i = 0; i < 1000; ++i) {
        run_once(*v, s, p);
        ASSERT_TRUE(bytes_of(p.results().at("pool")) == pool) << "pool, launch " << i;
        ASSERT_TRUE(bytes_of(p.results().at("pool_scale")) == scales) << "pool_scale, launch " << i;
        ASSERT_TRUE(bytes_of(p.results().at("o")) == o) << "o, launch " << i;
      }
    }
}

TEST_F(Sm90Prefill8bit, CapturedInAGraphAndReplayed) {
  const Variant* v = variant();
  ASSERT_NE(v, nullptr);
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  for (DType d : {DType::fp8e4m3, DType::i8})
    for (const char* plan : {"cp=off", "cp=1"}) {
      SCOPED_TRACE(std::string(to_string(d)) + " plan '" + plan + "'");
      Shape s = shapes(d)[2];
      s.plan = plan;
      Problem p(s, *backend_, kSeed);
      run_once(*v, s, p);
      const Bytes pool = bytes_of(p.results().at("pool")), scales = bytes_of(p.results().at("pool_scale"));
      test::replay_in_graph(*v, s, p, *backend_, 2, [&](int replay) {
        EXPECT_TRUE(bytes_of(p.results().at("pool")) == pool) << "pool, replay " << replay;
        EXPECT_TRUE(bytes_of(p.results().at("pool_scale")) == scales) << "pool_scale, replay " << replay;
      });
      const Verification r = check_outputs(p, effective_tolerances(s, v->tolerances), {}, 0);
      EXPECT_TRUE(r.pass) << test::describe(r);
    }
}

// Slots past 2^31 bytes: 4200 slots of 32 heads x 128 x 128 codes are 2.2e9 bytes, and the `high` pattern puts
// the sequences and their checkpoints in the top slots.
TEST_F(Sm90Prefill8bit, SlotsPast2To31Bytes) {
  const Variant* v = variant();
  ASSERT_NE(v, nullptr);
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  // fp8 unsplit, int8 split (the fixup's slot read): each 2.2 GB pool generated once.
  for (const auto& [d, plan] : {std::pair{DType::fp8e4m3, "cp=off"}, std::pair{DType::i8, "cp=1"}}) {
    Shape s = pooled({300, 130}, 16, 32, d, IndexPattern::high, 64);
    s.pool = 4200, s.plan = plan;
    ASSERT_GT(s.pool * s.h_v * s.dk * s.dv, int64_t(1) << 31);
    SCOPED_TRACE(std::string(to_string(d)) + " plan '" + plan + "'");
    const Verification r = verify_variant(*v, s, *backend_, kSeed);
    EXPECT_TRUE(r.pass) << test::describe(r);
  }
}

}  // namespace
}  // namespace gdn

// prefill/sm80 against the fp64 reference on the cases test_prefill_sm90.cpp makes hard (partial and
// single-token chunks, zero-length sequences, every GVA ratio of Qwen3.5, both gate forms, l2norm
// off, f16 inputs, both layouts, h0 absent, the stress inputs over many chunks, the pool form,
// offsets past 2^31 elements), under both preparation forms, three stages and split into segments;
// then 1000 launches bit-identical, batch invariance, a CUDA-graph capture, and the same bits as
// prefill/sm90's mma.sync two-pass plans, unsplit and split (the same arithmetic: its device code
// with two stages and no Hopper instructions). Runs on
// any GPU from sm_80 on; on Hopper the driver JIT-compiles its compute_80 PTX.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "core/op.h"
#include "core/registry.h"
#include "run/backend.h"
#include "run/problem.h"
#include "run/runner.h"
#include "run/verify.h"
#include "gpu/graph_replay.h"
#include "gpu/prefill_cases.h"
#include "gpu_suite.h"
#include "test_support.h"

namespace gdn {
namespace {

constexpr uint64_t kSeed = 20261129;

using Case = test::PrefillCase;
using test::bytes_of, test::prefill, test::run_shape, test::with, test::with_plan;

// The hard cases and a Qwen3.5 head shape (16/48), under both preparation forms with the two-stage
// scan, the three-stage scan where the device allows it (a skip elsewhere), the scan at block_v 64
// (four state warps), the one-q-tile layout of 99 KiB devices (also split, with their fixup of 128
// threads, whose four k slices sum in another order than sm90's eight), and split into segments
// of 2 and 3 chunks (the fixup with one and two M buffers).
std::vector<Case> cases() {
  std::vector<Case> c = test::hard_prefill_cases();
  c.push_back({"qwen35_16_48", prefill({300, 65}, 16, 48)});
  std::vector<Case> all;
  for (const auto& [tag, spec] : {std::pair<const char*, const char*>{"prep_head", "prep=head,stages=2"},
                                  {"prep_group", "prep=group,stages=2"},
                                  {"stages3", "prep=head,stages=3"},
                                  {"bv64", "prep=head,stages=2,block_v=64"},
                                  {"bv64_stages3", "prep=group,stages=3,block_v=64"},
                                  {"one_q_tile", "prep=head,q_tile=single"},
                                  {"one_q_tile_group", "prep=group,q_tile=single"},
                                  {"one_q_tile_cp2", "prep=head,q_tile=single,cp=2,fixup_threads=128"},
                                  {"cp2", "prep=head,stages=2,cp=2,fixup_m=1"},
                                  {"bv64_cp2", "prep=head,stages=2,block_v=64,cp=2,fixup_m=1"},
                                  {"cp3_stages3", "prep=group,stages=3,cp=3,fixup_m=2"}})
    for (const Case& one : c) all.push_back({one.label + "_" + tag, with_plan(one.shape, spec)});
  return all;
}

const Variant* sm80() { return Registry::instance().find("prefill/sm80"); }

class Sm80Prefill : public test::CudaSuite<Case> {};

TEST_P(Sm80Prefill, MatchesReference) {
  const Variant* v = sm80();
  ASSERT_NE(v, nullptr);
  const Case& c = GetParam();
  if (!backend_) GTEST_SKIP() << "CUDA backend unavailable: " << why_no_device_;
  if (auto why = backend_->can_run(*v); !why.empty()) GTEST_SKIP() << why;
  if (auto why = v->supports(c.shape); !why.empty()) {
    ASSERT_NE(why.find("shared memory per block"), std::string::npos) << why;  // only a device too small for the plan
    GTEST_SKIP() << why;
  }
  const Verification r = verify_variant(*v, c.shape, *backend_, kSeed);
  ASSERT_TRUE(r.ran);
  EXPECT_TRUE(r.pass) << v->plan(c.shape) << "\n" << test::describe(r);
}

INSTANTIATE_TEST_SUITE_P(Ampere, Sm80Prefill, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& i) { return i.param.label; });

class Sm80PrefillBits : public test::CudaSuite<int> {
 protected:
  // "" when prefill/sm80 can run here, else why not.
  std::string cannot_run() const {
    if (!backend_) return "CUDA backend unavailable: " + why_no_device_;
    return backend_->can_run(*sm80());
  }
  // prefill/sm80 under spec `ours` and `other` under spec `theirs`, on the same inputs of s: ours
  // passes the fp64 reference, and both give the same o and ht.
  void expect_same_bits(const Shape& s, const std::string& ours, const Variant& other, const std::string& theirs) {
    Problem p(s, *backend_, kSeed);
    const auto a = run_shape(*sm80(), with_plan(s, ours), p, *backend_);
    const Verification r = check_outputs(p, effective_tolerances(s, sm80()->tolerances), {}, 0);
    EXPECT_TRUE(r.pass) << sm80()->plan(with_plan(s, ours)) << "\n" << test::describe(r);
    const auto b = run_shape(other, with_plan(s, theirs), p, *backend_);
    EXPECT_TRUE(a.first == b.first) << "o differs";
    EXPECT_TRUE(a.second == b.second) << "ht differs";
  }
};

// The two stages and the load warps' mbarriers must give the same bits on every launch.
TEST_F(Sm80PrefillBits, ThousandLaunchesAreBitIdentical) {
  ASSERT_NE(sm80(), nullptr);
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  for (const char* plan :
       {"prep=head,stages=2", "prep=group,stages=2", "prep=head,stages=3", "prep=head,block_v=64", "prep=head,q_tile=single",
        "prep=head,cp=2,fixup_m=1", "prep=head,block_v=64,cp=2"}) {
    const Shape s = with_plan(prefill({777, 64, 1, 250}, 4, 16), plan);
    if (auto why = sm80()->supports(s); !why.empty()) continue;  // three stages where the device holds them
    Problem p(s, *backend_, kSeed);
    const auto first = run_shape(*sm80(), s, p, *backend_);
    const Verification r = check_outputs(p, effective_tolerances(s, sm80()->tolerances), {}, 0);
    ASSERT_TRUE(r.pass) << sm80()->plan(s) << "\n" << test::describe(r);
    const int launches = std::string(plan) == "prep=head,stages=2" ? 1000 : 100;
    for (int i = 1; i < launches; ++i) {
      const auto again = run_shape(*sm80(), s, p, *backend_);
      ASSERT_TRUE(again.first == first.first) << "o differs on launch " << i << " (" << plan << ")";
      ASSERT_TRUE(again.second == first.second) << "ht differs on launch " << i << " (" << plan << ")";
    }
  }
}

// On a Hopper GPU: prefill/sm90's two-pass plan on mma.sync (block_v 32, no split, the slots
// written by every thread, no programmatic launches) runs the same functions on the same tiles, so
// prefill/sm80 must give its bits: a difference is a stage mix-up in the two-stage scan or the
// stmatrix stores made by hand.
TEST_F(Sm80PrefillBits, GivesTheBitsOfSm90sMmaSyncPlan) {
  const Variant* hopper = Registry::instance().find("prefill/sm90");
  ASSERT_NE(sm80(), nullptr);
  ASSERT_NE(hopper, nullptr);
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  if (auto why = backend_->can_run(*hopper); !why.empty()) GTEST_SKIP() << why;
  const Shape shapes[] = {prefill({1, 17, 64, 130, 200, 0, 1000}, 2, 4), prefill({1, 17, 64, 130, 200, 0, 700}, 2, 6),
                          with(prefill({3, 64, 100, 129}, 1, 4, Layout::vk), [](Shape& s) {
                            s.input_dtype = DType::f16;
                            s.gate = GateForm::raw;
                            s.has_h0 = false;
                          })};
  for (const Shape& s : shapes)
    for (const char* prep : {"head", "group"}) {
      SCOPED_TRACE(s.key() + ", prep=" + prep);
      expect_same_bits(s, std::string("stages=2,block_v=32,prep=") + prep, *hopper,
                       std::string("cp=off,block_v=32,slot_write=threads,pdl=off,prep=") + prep);
    }
}

// Split into segments (transition pass, fixup, scan), prefill/sm80 runs prefill/sm90's split at
// block_v 32 on the same tiles: the same bits, with the fixup's one M buffer and with two.
TEST_F(Sm80PrefillBits, ItsSplitGivesTheBitsOfSm90sMmaSyncSplit) {
  const Variant* hopper = Registry::instance().find("prefill/sm90");
  ASSERT_NE(sm80(), nullptr);
  ASSERT_NE(hopper, nullptr);
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  if (auto why = backend_->can_run(*hopper); !why.empty()) GTEST_SKIP() << why;
  const Shape shapes[] = {prefill({1, 17, 64, 130, 200, 0, 1000}, 2, 4), prefill({2000, 5, 640}, 1, 3)};
  for (const Shape& s : shapes)
    for (const char* fixup : {"1", "2"}) {
      SCOPED_TRACE(s.key() + ", fixup_m=" + fixup);
      if (auto why = sm80()->supports(with_plan(s, std::string("cp=2,fixup_m=") + fixup)); !why.empty()) GTEST_SKIP() << why;
      expect_same_bits(s, std::string("prep=head,stages=2,block_v=32,cp=2,fixup_m=") + fixup, *hopper,
                       "cp=2,block_v=32,cp_block_v=32,slot_write=threads,pdl=off,prep=head");
    }
}

// Each state warp computes its 16 columns the same way whatever the CTA's width: block_v 64 (four
// state warps) gives block_v 32's bits, unsplit and split.
TEST_F(Sm80PrefillBits, BlockV64GivesTheBitsOfBlockV32) {
  ASSERT_NE(sm80(), nullptr);
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  for (const Shape& s : {prefill({1, 17, 64, 130, 200, 0, 1000}, 2, 4), prefill({3, 64, 100, 129}, 1, 4, Layout::vk)}) {
    SCOPED_TRACE(s.key());
    expect_same_bits(s, "cp=off,block_v=64", *sm80(), "cp=off,block_v=32");
    expect_same_bits(s, "cp=2,block_v=64", *sm80(), "cp=2,block_v=32");
  }
}

// One q tile changes when the next chunk's copies start, not what a chunk computes: the bits of
// the staged layout, bf16 (q rewritten as f16 in the tile) and f16.
TEST_F(Sm80PrefillBits, OneQTileGivesTheBitsOfStagedQ) {
  ASSERT_NE(sm80(), nullptr);
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  const Shape shapes[] = {prefill({1, 17, 64, 130, 200, 0, 1000}, 2, 4),
                          with(prefill({3, 64, 100, 129, 700}, 1, 4, Layout::vk), [](Shape& s) { s.input_dtype = DType::f16; })};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(s.key());
    expect_same_bits(s, "cp=off,q_tile=single", *sm80(), "cp=off,block_v=32,stages=2,q_tile=staged");
  }
}

// The stage count changes where a chunk waits, not what it computes: three stages give two's bits.
TEST_F(Sm80PrefillBits, ThreeStagesGiveTheBitsOfTwo) {
  ASSERT_NE(sm80(), nullptr);
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  const Shape s = prefill({1, 17, 64, 130, 200, 0, 1000}, 2, 4);
  if (auto why = sm80()->supports(with_plan(s, "stages=3")); !why.empty()) GTEST_SKIP() << why;
  expect_same_bits(s, "stages=3", *sm80(), "stages=2");
}

// Sequence 1 of a three-sequence batch, run alone on the same inputs, gives the same bits.
TEST_F(Sm80PrefillBits, OneSequenceIsBatchInvariant) {
  ASSERT_NE(sm80(), nullptr);
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  constexpr int64_t HV = 8;
  const Shape batch = prefill({137, 300, 64}, 4, int(HV)), alone = prefill({300}, 4, int(HV));
  Problem pb(batch, *backend_, kSeed), pa(alone, *backend_, kSeed + 1);
  const int64_t first = 137, count = 300;
  test::copy_sequence_inputs(pb, pa, first, count, 1);
  const auto in_batch = run_shape(*sm80(), batch, pb, *backend_);
  const auto by_itself = run_shape(*sm80(), alone, pa, *backend_);
  test::expect_same_sequence_bits(in_batch, by_itself, batch, first, count, 1);
  const Verification r = check_outputs(pa, effective_tolerances(alone, sm80()->tolerances), {}, 0);
  EXPECT_TRUE(r.pass) << test::describe(r);
}

// Captured into a graph in global mode and replayed twice: the same bits as a direct launch.
TEST_F(Sm80PrefillBits, CapturedInAGraphAndReplayed) {
  ASSERT_NE(sm80(), nullptr);
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  const Shape s = prefill({0, 129, 1, 64}, 2, 8);
  Problem p(s, *backend_, kSeed);
  const auto direct = run_shape(*sm80(), s, p, *backend_);
  test::replay_in_graph(*sm80(), s, p, *backend_, 2, [&](int replay) {
    EXPECT_TRUE(bytes_of(p.results().at("o")) == direct.first) << "o, replay " << replay;
    EXPECT_TRUE(bytes_of(p.results().at("ht")) == direct.second) << "ht, replay " << replay;
  });
  const Verification r = check_outputs(p, effective_tolerances(s, sm80()->tolerances), {}, 0);
  EXPECT_TRUE(r.pass) << test::describe(r);
}

// o and v past 2^31 elements (the second sequence starts at token 131072 of 128 value heads); two
// value heads verified.
TEST_F(Sm80PrefillBits, OffsetsPast2To31Elements) {
  ASSERT_NE(sm80(), nullptr);
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  const Shape s = prefill({131072, 70}, 2, 128);
  const uint64_t need = Problem::footprint(s) + (uint64_t(1) << 30);
  if (backend_->free_memory() < need) GTEST_SKIP() << "needs " << (need >> 20) << " MiB of device memory";
  const Verification r = verify_variant(*sm80(), s, *backend_, kSeed, 2);
  ASSERT_TRUE(r.ran);
  EXPECT_TRUE(r.pass) << sm80()->plan(s) << "\n" << test::describe(r);
}

}  // namespace
}  // namespace gdn

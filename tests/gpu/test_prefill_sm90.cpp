// prefill/sm90 on a Hopper GPU against the fp64 reference, on the cases its own machinery makes
// hard (test_variants.cpp covers the common prefill cases): partial and single-token chunks,
// zero-length sequences (repeated cu_seqlens entries), every GVA ratio of Qwen3.5, both gate forms,
// l2norm off, f16 inputs, both state layouts, h0 absent, the stress inputs over many chunks, each
// block_v, and offsets past 2^31 elements; every case under each plan spec that reaches another
// kernel or launch (Shape::plan: both schedules, each block_v, context parallelism, the
// preparation's forms). Then the properties a benchmark cannot see: 1000 launches bit-identical
// (races), every scan form and the fused kernel bit-identical (the same arithmetic on other warps
// or in another kernel), one sequence bit-identical whatever else is in the batch, and a CUDA-graph
// capture (global mode: any synchronising call fails it) replayed. Skips without a Hopper GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "core/half.h"
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

constexpr uint64_t kSeed = 20261201;

using test::prefill;
using test::with;
using test::with_plan;
using test::Bytes;
using test::bytes_of;
using test::run_shape;
using Case = test::PrefillCase;

std::vector<Case> cases() {
  std::vector<Case> c = test::hard_prefill_cases();
  // Each block_v on a Qwen3.5 head shape (16/48: GVA 3).
  for (const char* bv : {"32", "64", "128"})
    c.push_back({std::string("block_v_") + bv, with_plan(prefill({300, 65}, 16, 48), std::string("block_v=") + bv)});
  // Every case under each spec: the default plan, the two-pass schedule split (segments of 2 chunks,
  // and of 1 chunk with the transition pass at block_v 32), at block_v 64 and 128 split and
  // unsplit, the preparation per q/k head, bulk slot writes, and the fused schedule. A case's own
  // block_v (above) joins the specs that name none.
  const std::pair<const char*, const char*> specs[] = {{"default", ""},
                                                       {"cp2", "cp=2"},
                                                       {"cp1_tv32", "cp=1,cp_block_v=32"},
                                                       {"cp2_bv64", "cp=2,block_v=64"},
                                                       {"bv128", "cp=off,block_v=128"},
                                                       {"cp2_bv128", "cp=2,block_v=128"},
                                                       {"prepgroup", "prep=group"},
                                                       {"bulk", "slot_write=bulk"},
                                                       {"prepgroup_bulk", "prep=group,slot_write=bulk"},
                                                       {"cp2_bv128_bulk", "cp=2,block_v=128,slot_write=bulk"},
                                                       {"fused", "schedule=fused"}};
  std::vector<Case> all;
  for (const auto& [tag, spec] : specs)
    for (const Case& one : c) {
      const std::string own = one.shape.plan, named = spec;
      const bool names_block_v = named.rfind("block_v=", 0) == 0 || named.find(",block_v=") != std::string::npos;
      if (!own.empty() && (names_block_v || named == "schedule=fused")) continue;
      const std::string plan = own.empty() ? named : named.empty() ? own : named + "," + own;
      all.push_back({one.label + "_" + tag, with_plan(one.shape, plan)});
    }
  return all;
}

class Sm90Prefill : public test::CudaSuite<Case> {
 protected:
  const Variant* variant() const { return Registry::instance().find("prefill/sm90"); }
  // "" when the test can run here, else why not.
  std::string cannot_run() const {
    if (!backend_) return "CUDA backend unavailable: " + why_no_device_;
    return backend_->can_run(*variant());
  }
};

TEST_P(Sm90Prefill, MatchesReference) {
  const Variant* v = variant();
  ASSERT_NE(v, nullptr);
  const Case& c = GetParam();
  ASSERT_EQ(v->supports(c.shape), "") << c.shape.key() << ", plan '" << c.shape.plan << "'";
  if (auto why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  const Verification r = verify_variant(*v, c.shape, *backend_, kSeed);
  ASSERT_TRUE(r.ran);
  EXPECT_TRUE(r.pass) << v->plan(c.shape) << "\n" << test::describe(r);
}

INSTANTIATE_TEST_SUITE_P(Hopper, Sm90Prefill, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& i) { return i.param.label; });

// ---- bit-level properties ----------------------------------------------------------------

std::pair<Bytes, Bytes> run_once(const Variant& v, Problem& p, ExecBackend& backend) { return run_shape(v, p.shape(), p, backend); }

// run_once under the plan spec `plan` (Shape::plan).
std::pair<Bytes, Bytes> run_with_plan(const std::string& plan, const Variant& v, Problem& p, ExecBackend& backend) {
  return run_shape(v, with_plan(p.shape(), plan), p, backend);
}

// run_with_plan, then the outputs checked against the reference (a failure is reported, the bits
// are returned either way): the bit tests compare verified launches.
std::pair<Bytes, Bytes> run_verified(const std::string& plan, const Variant& v, Problem& p, ExecBackend& backend) {
  auto bits = run_with_plan(plan, v, p, backend);
  const Verification r = check_outputs(p, effective_tolerances(p.shape(), v.tolerances), {}, 0);
  EXPECT_TRUE(r.pass) << v.plan(with_plan(p.shape(), plan)) << "\n" << test::describe(r);
  return bits;
}

// Each plan run on p (verified), and its o and ht bit-identical to the first plan's.
void expect_the_first_plans_bits(const std::vector<std::string>& plans, const Variant& v, Problem& p, ExecBackend& backend) {
  const std::pair<Bytes, Bytes> first = run_verified(plans.front(), v, p, backend);
  for (size_t k = 1; k < plans.size(); ++k) {
    const std::pair<Bytes, Bytes> bits = run_verified(plans[k], v, p, backend);
    EXPECT_TRUE(first.first == bits.first) << "o differs: " << plans[k] << " against " << plans.front();
    EXPECT_TRUE(first.second == bits.second) << "ht differs: " << plans[k] << " against " << plans.front();
  }
}

class Sm90PrefillBits : public test::CudaSuite<int> {};

// Warp-specialised pipelines fail intermittently (docs/method.md A.5); this kernel's
// barriers and cp.async stages must give the same bits on every launch.
TEST_F(Sm90PrefillBits, ThousandLaunchesAreBitIdentical) {
  const Variant* v = Registry::instance().find("prefill/sm90");
  ASSERT_NE(v, nullptr);
  if (!backend_) GTEST_SKIP() << "CUDA backend unavailable: " << why_no_device_;
  if (auto why = backend_->can_run(*v); !why.empty()) GTEST_SKIP() << why;
  for (const std::string plan : {"", "cp=off,block_v=32", "cp=off,block_v=64", "cp=off,block_v=128", "cp=2", "cp=1,cp_block_v=32",
                                 "cp=2,block_v=64", "cp=2,block_v=128", "schedule=fused", "cp=off,prep=group", "cp=off,slot_write=bulk",
                                 "cp=off,slot_write=bulk,prep=group", "cp=2,pdl=off"}) {
    const Shape s = with_plan(prefill({777, 64, 1, 250}, 4, 16), plan);
    Problem p(s, *backend_, kSeed);
    const auto first = run_once(*v, p, *backend_);
    const Verification r = check_outputs(p, effective_tolerances(s, v->tolerances), {}, 0);
    ASSERT_TRUE(r.pass) << v->plan(s) << "\n" << test::describe(r);
    const int launches = plan.empty() ? 1000 : 100;
    for (int i = 1; i < launches; ++i) {
      const auto again = run_once(*v, p, *backend_);
      ASSERT_TRUE(again.first == first.first) << "o differs on launch " << i << " (" << v->plan(s) << ")";
      ASSERT_TRUE(again.second == first.second) << "ht differs on launch " << i << " (" << v->plan(s) << ")";
    }
  }
}

// Sequence 1 of a three-sequence batch, run alone on the same inputs, gives the same bits, in both
// schedules: the batch changes the two-pass block_v (32 value heads: 32 alone, 64 or 128 in the
// batch) and the grid, not the arithmetic. Context parallelism is off here: a split changes the bits (the
// plan line says so), which is why it is left to the plan's rule and never depends on anything
// but the batch's shape.
TEST_F(Sm90PrefillBits, OneSequenceIsBatchInvariant) {
  const Variant* v = Registry::instance().find("prefill/sm90");
  ASSERT_NE(v, nullptr);
  if (!backend_) GTEST_SKIP() << "CUDA backend unavailable: " << why_no_device_;
  if (auto why = backend_->can_run(*v); !why.empty()) GTEST_SKIP() << why;
  constexpr int64_t HV = 32;
  for (const char* plan : {"cp=off", "schedule=fused"}) {
    SCOPED_TRACE(plan);
    const Shape batch = with_plan(prefill({137, 300, 64}, 16, int(HV)), plan), alone = with_plan(prefill({300}, 16, int(HV)), plan);
    EXPECT_NE(v->plan(batch), v->plan(alone));
    Problem pb(batch, *backend_, kSeed), pa(alone, *backend_, kSeed + 1);
    // Sequence 1's rows (tokens 137..436) and state slot into the lone problem's inputs.
    const int64_t first = 137, count = 300;
    test::copy_sequence_inputs(pb, pa, first, count, 1);
    const auto in_batch = run_once(*v, pb, *backend_);
    const auto by_itself = run_once(*v, pa, *backend_);
    test::expect_same_sequence_bits(in_batch, by_itself, batch, first, count, 1);
    const Verification r = check_outputs(pa, effective_tolerances(alone, v->tolerances), {}, 0);
    EXPECT_TRUE(r.pass) << test::describe(r);
  }
}

// Every scan form runs the same arithmetic per value column: the mma.sync state warps (block_v 32),
// one wgmma warpgroup (64) and two (128) issue the same k16 products in the same order per element
// (the triangle products skip the same blocks, or multiply the zeros above the diagonal), and the
// fused kernel runs the preparation kernel's functions in the same order on the same tiles, with
// the scan's state warpgroups. So they give the same bits if the tensor cores round a k16 step alike
// in both instructions, and block_v never changes a sequence's bits. A difference is a race or a
// stage/buffer/slot mix-up, or the compiler contracting the instantiations differently: the
// verification of each says which.
TEST_F(Sm90PrefillBits, EveryScanFormAndTheFusedKernelGiveTheSameBits) {
  const Variant* v = Registry::instance().find("prefill/sm90");
  ASSERT_NE(v, nullptr);
  if (!backend_) GTEST_SKIP() << "CUDA backend unavailable: " << why_no_device_;
  if (auto why = backend_->can_run(*v); !why.empty()) GTEST_SKIP() << why;
  const Shape shapes[] = {prefill({1, 17, 64, 130, 200, 0, 1000}, 2, 4), prefill({1, 17, 64, 130, 200, 0, 1000}, 2, 6),
                          prefill({1, 17, 64, 130, 200, 0, 1000}, 2, 2),
                          with(prefill({3, 64, 100, 129}, 1, 4, Layout::vk), [](Shape& s) {
                            s.input_dtype = DType::f16;
                            s.gate = GateForm::raw;
                            s.has_h0 = false;
                          })};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(s.key());
    Problem p(s, *backend_, kSeed);
    expect_the_first_plans_bits({"cp=off,block_v=32", "cp=off,block_v=64", "cp=off,block_v=128", "schedule=fused"}, *v, p, *backend_);
  }
}

// Programmatic dependent launches (pdl) only let a kernel's CTAs start before the one before it
// ends, each waiting for that one's results: the same bits as launches in plain stream order, split
// (M used with no_decay, dropped by the warm-up with standard inputs; both transition widths) and
// unsplit, over ragged, single-token and zero-length sequences.
TEST_F(Sm90PrefillBits, DependentLaunchesGiveTheSameBits) {
  const Variant* v = Registry::instance().find("prefill/sm90");
  ASSERT_NE(v, nullptr);
  if (!backend_) GTEST_SKIP() << "CUDA backend unavailable: " << why_no_device_;
  if (auto why = backend_->can_run(*v); !why.empty()) GTEST_SKIP() << why;
  for (const InputDist dist : {InputDist::standard, InputDist::no_decay}) {
    const Shape s = with(prefill({1, 17, 0, 640, 200, 1300}, 2, 4), [&](Shape& x) { x.inputs = dist; });
    SCOPED_TRACE(s.key());
    Problem p(s, *backend_, kSeed);
    for (const std::string base : {"cp=2", "cp=1,cp_block_v=32,block_v=128", "cp=off"})
      expect_the_first_plans_bits({base + ",pdl=off", base + ",pdl=on"}, *v, p, *backend_);
  }
}

// The preparation per q/k head (prep=group) runs each value head's preparation with the same
// functions in the same order as one CTA per value head, so the same bits, for every GVA ratio.
TEST_F(Sm90PrefillBits, PreparationPerQkHeadGivesTheSameBits) {
  const Variant* v = Registry::instance().find("prefill/sm90");
  ASSERT_NE(v, nullptr);
  if (!backend_) GTEST_SKIP() << "CUDA backend unavailable: " << why_no_device_;
  if (auto why = backend_->can_run(*v); !why.empty()) GTEST_SKIP() << why;
  for (const int hv : {2, 4, 6, 8}) {
    const Shape s = prefill({1, 17, 64, 130, 200, 0, 700}, 2, hv);
    SCOPED_TRACE(s.key());
    Problem p(s, *backend_, kSeed);
    expect_the_first_plans_bits({"cp=off,prep=head", "cp=off,prep=group"}, *v, p, *backend_);
  }
}

// The preparation writes its slots by bulk copies or by every thread's stores: the same bytes, so
// the same bits, for every scan form (mma.sync at block_v 32, wgmma at 64 and 128, a split with
// its transition pass and warm-up) and both preparation forms.
TEST_F(Sm90PrefillBits, BulkSlotWritesGiveTheSameBits) {
  const Variant* v = Registry::instance().find("prefill/sm90");
  ASSERT_NE(v, nullptr);
  if (!backend_) GTEST_SKIP() << "CUDA backend unavailable: " << why_no_device_;
  if (auto why = backend_->can_run(*v); !why.empty()) GTEST_SKIP() << why;
  const Shape s = prefill({1, 17, 64, 130, 200, 0, 700}, 2, 8);
  Problem p(s, *backend_, kSeed);
  for (const std::string plan : {"cp=off,block_v=32", "cp=off,block_v=64", "cp=off,block_v=128", "cp=2,cp_block_v=32",
                                 "cp=4,block_v=128", "cp=off,prep=group", "cp=off,prep=group,block_v=32"}) {
    SCOPED_TRACE(plan);
    expect_the_first_plans_bits({plan + ",slot_write=threads", plan + ",slot_write=bulk"}, *v, p, *backend_);
  }
}

// The launch captured into a graph in global mode (a synchronising or device-to-host call would
// end the capture with an error), replayed twice: same bits as a direct launch; both schedules (the
// two-pass workspace has grown in the direct launch).
TEST_F(Sm90PrefillBits, CapturedInAGraphAndReplayed) {
  const Variant* v = Registry::instance().find("prefill/sm90");
  ASSERT_NE(v, nullptr);
  if (!backend_) GTEST_SKIP() << "CUDA backend unavailable: " << why_no_device_;
  if (auto why = backend_->can_run(*v); !why.empty()) GTEST_SKIP() << why;
  for (const char* plan : {"schedule=two_pass", "cp=1", "cp=1,pdl=off", "schedule=fused"}) {
    SCOPED_TRACE(plan);
    const Shape s = with_plan(prefill({0, 129, 1, 64}, 2, 8), plan);
    Problem p(s, *backend_, kSeed);
    const auto direct = run_once(*v, p, *backend_);
    test::replay_in_graph(*v, s, p, *backend_, 2, [&](int replay) {
      EXPECT_TRUE(bytes_of(p.results().at("o")) == direct.first) << "o, replay " << replay;
      EXPECT_TRUE(bytes_of(p.results().at("ht")) == direct.second) << "ht, replay " << replay;
    });
    const Verification r = check_outputs(p, effective_tolerances(s, v->tolerances), {}, 0);
    EXPECT_TRUE(r.pass) << test::describe(r);
  }
}

// o and v past 2^31 elements: the second sequence starts at token 131072 of 128 value heads, so
// every one of its o / v offsets is >= 2^31 (a 32-bit offset lands elsewhere). Two value heads are
// verified (the fp64 reference of all 128 would take minutes).
TEST_F(Sm90PrefillBits, OffsetsPast2To31Elements) {
  const Variant* v = Registry::instance().find("prefill/sm90");
  ASSERT_NE(v, nullptr);
  if (!backend_) GTEST_SKIP() << "CUDA backend unavailable: " << why_no_device_;
  if (auto why = backend_->can_run(*v); !why.empty()) GTEST_SKIP() << why;
  const Shape s = prefill({131072, 70}, 2, 128);
  ASSERT_GT(int64_t(131072) * 128 * 128, (int64_t(1) << 31) - 1);
  const uint64_t need = Problem::footprint(s) + (uint64_t(1) << 30);
  if (backend_->free_memory() < need) GTEST_SKIP() << "needs " << (need >> 20) << " MiB of device memory";
  for (const char* plan : {"", "cp=256", "schedule=fused"}) {
    const Verification r = verify_variant(*v, with_plan(s, plan), *backend_, kSeed, 2);
    ASSERT_TRUE(r.ran);
    EXPECT_TRUE(r.pass) << v->plan(with_plan(s, plan)) << "\n" << test::describe(r);
  }
}

// Context parallelism splits a long sequence's scan (segments.h): the split and the unsplit
// results both pass the reference and stay close to each other, the split's bits are the same on
// every launch, and the plan's own rule splits 2/8 1x32768 (32 CTAs unsplit) but not 16/64
// 4096x8 (several waves).
TEST_F(Sm90PrefillBits, ContextParallelSplitMatchesTheUnsplitScan) {
  const Variant* v = Registry::instance().find("prefill/sm90");
  ASSERT_NE(v, nullptr);
  if (!backend_) GTEST_SKIP() << "CUDA backend unavailable: " << why_no_device_;
  if (auto why = backend_->can_run(*v); !why.empty()) GTEST_SKIP() << why;
  EXPECT_NE(v->plan(prefill({32768}, 2, 8)).find("context parallel"), std::string::npos) << v->plan(prefill({32768}, 2, 8));
  EXPECT_EQ(v->plan(prefill({4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096}, 16, 64)).find("context parallel"),
            std::string::npos);
  for (const InputDist dist : {InputDist::standard, InputDist::no_decay}) {
    const Shape s = with(prefill({6000, 1, 4100}, 1, 2), [&](Shape& x) { x.inputs = dist; });
    SCOPED_TRACE(s.key());
    Problem p(s, *backend_, kSeed);
    std::pair<Bytes, Bytes> bits[2];
    const char* plans[2] = {"cp=off", "cp=8"};
    for (int k = 0; k < 2; ++k) {
      bits[k] = run_verified(plans[k], *v, p, *backend_);
      if (k == 1) {
        for (int i = 0; i < 20; ++i) ASSERT_TRUE(run_with_plan(plans[1], *v, p, *backend_) == bits[1]) << "launch " << i;
      }
    }
    // The split's o may differ from the unsplit one's only in its last bits.
    const auto* a = reinterpret_cast<const uint16_t*>(bits[0].first.data());
    const auto* b = reinterpret_cast<const uint16_t*>(bits[1].first.data());
    double diff = 0, norm = 0;
    for (size_t i = 0; i < bits[0].first.size() / 2; ++i) {
      const double x = bf16_to_float(a[i]), y = bf16_to_float(b[i]);
      diff += (x - y) * (x - y), norm += x * x;
    }
    EXPECT_LT(std::sqrt(diff / norm), 5e-3) << "o of the split against the unsplit scan, relative L2";
  }
}

}  // namespace
}  // namespace gdn

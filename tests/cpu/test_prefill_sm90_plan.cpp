// The host half of prefill/sm90 without a GPU: the default plan each call gets (schedule,
// block_v, split, grid), the plan specs of the `plan` axis (Shape::plan) and their knobs, the
// shapes it declines and why, the plan line reports record, and the shared-memory layout the
// kernels and the launch agree on (kernels/prefill/sm90/).
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/registry.h"
#include "prefill/sm90/plan.h"
#include "prefill/sm90/lane_offsets.h"
#include "prefill/sm90/segments.h"
#include "prefill/sm90/workspace.h"
#include "prefill/sm90/smem_layout.h"
#include "test_support.h"

namespace gdn {
namespace {

using sm90::Batch;
using sm90::Plan;
using sm90::Schedule;

Shape prefill(std::vector<int64_t> lens, int h_qk, int h_v) {
  Shape s;
  s.op = OpKind::prefill;
  s.seqlens = std::move(lens);
  s.h_qk = h_qk, s.h_v = h_v;
  s.dk = s.dv = 128;
  s.layout = Layout::kv;
  return s;
}

// The default plan on 132 SMs.
Plan default_plan(std::vector<int64_t> lens, int h_qk, int h_v) { return sm90::choose(Batch::of(prefill(std::move(lens), h_qk, h_v)), 132); }
// The plan of a spec on 132 SMs.
Plan plan_of(const Batch& b, const std::string& spec) { return sm90::plan_for(b, 132, spec); }

Plan two_pass_at(int block_v) {
  Plan p;
  p.block_v = block_v;
  return p;
}

TEST(Sm90Plan, DefaultIsTwoPassAtTheSmallestBlockVWhoseGridFitsOneWave) {
  const Batch one = Batch::of(prefill({32768}, 16, 32));  // 128 CTAs at block_v 32
  Plan at32 = two_pass_at(32), at64 = two_pass_at(64);
  at32.prep_group = at64.prep_group = true;              // GVA 2, 513 and 130 slots x 16 q/k heads
  at32.bulk_slot_writes = at64.bulk_slot_writes = true;  // 8208 and 2080 preparation CTAs: several waves
  EXPECT_EQ(sm90::choose(one, 132, Schedule::two_pass), at32);  // unsplit; the default splits it (below)
  EXPECT_FALSE(Plan::wgmma_at(32));
  const Batch two = Batch::of(prefill({4096, 4096}, 16, 32));  // 128 CTAs at block_v 64
  EXPECT_EQ(sm90::choose(two, 132), at64);
  EXPECT_TRUE(Plan::wgmma_at(64));
  // Fewer SMs, fewer splits; an unknown count plans for an H100/H200.
  auto block_v = [](std::vector<int64_t> lens, int h, int hv, int sms) {
    return sm90::choose(Batch::of(prefill(std::move(lens), h, hv)), sms, Schedule::two_pass).block_v;
  };
  EXPECT_EQ(block_v({32768}, 16, 32, 100), 64);
  EXPECT_EQ(block_v({32768}, 16, 32, 0), 32);
  EXPECT_EQ(block_v({32768}, 2, 8, 132), 32);    // 32 CTAs (the split fills the rest: below)
  EXPECT_EQ(block_v({2048}, 8, 24, 132), 32);    // 96 CTAs
  EXPECT_EQ(block_v({32768}, 16, 48, 132), 64);  // 4 x 48 = 192 > 132: 2 x 48 = 96
  // Zero-length sequences still get their CTAs (they copy h0 to ht).
  const Batch zero_lengths = Batch::of(prefill({0, 5, 0}, 1, 4));
  EXPECT_EQ(sm90::choose(zero_lengths, 132, Schedule::two_pass).ctas(zero_lengths), 4 * 3 * 4);
}

// The fused schedule (block_v 128) by default where GVA is 1, two_pass would not split, one CTA per
// (sequence, value head) fills 0.9 of the SMs and no sequence is longer than twice the mean (H100:
// 0.81-0.83x two_pass on the six such qwen35 cells), and at GVA 2 where that grid is 1.8 x the SMs
// (0.92-0.98x on 16/32 1024x8 and 4096x8); two_pass everywhere else. A spec naming a two-pass knob
// starts from the two-pass plan.
TEST(Sm90Plan, FusedWhereGvaIsOneOrTwoAndItsGridFillsTheGpu) {
  for (const auto& [lens, h] : std::vector<std::pair<std::vector<int64_t>, int>>{
           {std::vector<int64_t>(8, 1024), 16}, {std::vector<int64_t>(8, 4096), 16}, {std::vector<int64_t>(4, 8192), 32},
           {std::vector<int64_t>(4, 2048), 32}, {std::vector<int64_t>(8, 1024), 32}, {{5000, 3000, 4000, 4000}, 32}}) {
    const Plan p = default_plan(lens, h, h);
    EXPECT_EQ(p.schedule, Schedule::fused) << h << " heads, " << lens.size() << " sequences";
    EXPECT_EQ(p.block_v, 128);
    EXPECT_TRUE(Plan::pingpong_at(p.block_v));
    EXPECT_FALSE(p.pdl || p.prep_group || p.bulk_slot_writes || p.seg_chunks > 0);
  }
  EXPECT_EQ(default_plan(std::vector<int64_t>(4, 2048), 16, 16).schedule, Schedule::two_pass);  // 64 CTAs at 128
  EXPECT_EQ(default_plan(std::vector<int64_t>(8, 1024), 16, 32).schedule, Schedule::fused);     // GVA 2, 256 CTAs
  EXPECT_EQ(default_plan(std::vector<int64_t>(8, 4096), 16, 32).schedule, Schedule::fused);
  EXPECT_EQ(default_plan(std::vector<int64_t>(4, 8192), 16, 32).schedule, Schedule::two_pass);  // GVA 2, one wave
  EXPECT_EQ(default_plan(std::vector<int64_t>(4, 2048), 16, 32).schedule, Schedule::two_pass);
  EXPECT_EQ(default_plan(std::vector<int64_t>(8, 4096), 8, 32).schedule, Schedule::two_pass);   // GVA 4
  EXPECT_EQ(default_plan({32768}, 16, 16).schedule, Schedule::two_pass);                       // 16 CTAs, split
  EXPECT_EQ(default_plan({30000, 100, 100, 100, 100, 100, 100, 100}, 32, 32).schedule, Schedule::two_pass);  // one long chain
  EXPECT_EQ(default_plan({2000, 1000, 1000, 1000}, 32, 32).schedule, Schedule::fused);  // 1.6x the mean
  // 119 CTAs of 132 is 0.9: in; 118 is not.
  const Batch in = Batch::of(prefill(std::vector<int64_t>(7, 1024), 17, 17)), out = Batch::of(prefill(std::vector<int64_t>(2, 1024), 59, 59));
  EXPECT_TRUE(sm90::fused_wins(in, sm90::choose(in, 132, Schedule::two_pass), 132));
  EXPECT_FALSE(sm90::fused_wins(out, sm90::choose(out, 132, Schedule::two_pass), 132));
  const Batch many = Batch::of(prefill(std::vector<int64_t>(8, 4096), 16, 16));
  EXPECT_TRUE(test::contains(sm90::choose(many, 132).describe(many, 132), "fused: a preparation warpgroup"))
      << sm90::choose(many, 132).describe(many, 132);
  const Plan head = plan_of(many, "prep=head");  // a two-pass knob: the two-pass plan
  EXPECT_EQ(head.schedule, Schedule::two_pass);
  EXPECT_FALSE(head.prep_group);
  EXPECT_EQ(plan_of(many, "schedule=two_pass"), sm90::choose(many, 132, Schedule::two_pass));
  EXPECT_EQ(plan_of(many, "block_v=64").schedule, Schedule::two_pass);  // the fused kernel has block_v 128 only
  EXPECT_EQ(plan_of(many, "pdl=off"), sm90::choose(many, 132));        // what the fused plan is already
  EXPECT_EQ(plan_of(many, "block_v=128"), sm90::choose(many, 132));
}

// two_pass after the one-wave rule: block_v 128 where several waves at 64 become fewer, fuller waves
// (H200: 16/64 4096x8 1.810 -> 1.557 ms, 16/64 16384x2 1.807 -> 1.507, 16/32 1024x8 0.259 ->
// 0.224), not where one wave of 128 CTAs at 64 would become 64 CTAs (16/32 16384x2 0.916 ->
// 1.118, 16/64 1x32768 1.798 -> 2.201).
int two_pass_block_v(std::vector<int64_t> lens, int h, int hv) {
  return sm90::choose(Batch::of(prefill(lens, h, hv)), 132, Schedule::two_pass).block_v;
}
TEST(Sm90Plan, TwoPassTakesBlockV128WhereItShortensTheWaves) {
  const std::vector<int64_t> eight(8, 4096), two(2, 16384), eight_small(8, 1024);
  EXPECT_EQ(two_pass_block_v(eight, 16, 64), 128);
  EXPECT_EQ(two_pass_block_v(eight, 16, 32), 128);
  EXPECT_EQ(two_pass_block_v(eight, 8, 32), 128);
  EXPECT_EQ(two_pass_block_v(two, 16, 64), 128);
  EXPECT_EQ(two_pass_block_v(eight_small, 16, 32), 128);
  EXPECT_EQ(two_pass_block_v(two, 16, 32), 64);  // 128 CTAs at 64: one wave
  EXPECT_EQ(two_pass_block_v({32768}, 16, 64), 64);
  EXPECT_EQ(two_pass_block_v(eight_small, 2, 8), 64);
  EXPECT_EQ(two_pass_block_v({4096, 4096}, 16, 32), 64);
  EXPECT_EQ(two_pass_block_v({32768}, 16, 32), 32);
  EXPECT_TRUE(Plan::wgmma_at(sm90::choose(Batch::of(prefill(eight, 16, 64)), 132).block_v));
}

// The preparation per q/k head where GVA is 2 or more and its grid has one and a half CTAs per SM
// (prep_kernel.cuh; each CTA prepares its GVA value heads in turn; H100: 130-132 CTAs lose, 258 win).
bool prep_group(std::vector<int64_t> lens, int h, int hv) {  // two_pass's choice (16/32 4096x8 is fused)
  const Batch b = Batch::of(prefill(lens, h, hv));
  return sm90::choose_context_parallel(b, sm90::choose(b, 132, Schedule::two_pass), 132).prep_group;
}
TEST(Sm90Plan, PreparationPerQkHeadWhereGvaIsTwoOrMoreAndTheGridDeep) {
  const std::vector<int64_t> eight(8, 4096);
  EXPECT_TRUE(prep_group(eight, 16, 64));
  EXPECT_TRUE(prep_group(eight, 8, 32));
  EXPECT_TRUE(prep_group(eight, 4, 16));
  EXPECT_TRUE(prep_group(eight, 16, 32));   // GVA 2
  EXPECT_FALSE(prep_group(eight, 16, 16));  // GVA 1: nothing to share
  EXPECT_FALSE(prep_group(eight, 32, 32));
  EXPECT_TRUE(prep_group(eight, 8, 24));    // GVA 3
  EXPECT_TRUE(prep_group(eight, 16, 48));
  EXPECT_TRUE(prep_group({2048}, 16, 32));  // 33 slots x 16 q/k heads = 528 CTAs
  EXPECT_TRUE(prep_group({2048}, 8, 24));   // 33 x 8 = 264
  EXPECT_TRUE(prep_group({8192}, 2, 8));    // 129 x 2 = 258 >= 1.5 x 132
  EXPECT_FALSE(prep_group({4096}, 2, 8));   // 65 x 2 = 130
  EXPECT_FALSE(prep_group({2048}, 4, 16));  // 33 x 4 = 132
  EXPECT_FALSE(prep_group({2048}, 2, 8));   // 33 x 2 = 66
  EXPECT_TRUE(prep_group({32768}, 2, 8));   // 513 x 2 = 1026
  const Batch few = Batch::of(prefill({4096}, 2, 8));
  ASSERT_FALSE(sm90::choose(few, 132).prep_group);
  EXPECT_TRUE(plan_of(few, "prep=group").prep_group);
  EXPECT_FALSE(plan_of(Batch::of(prefill(eight, 16, 64)), "prep=head").prep_group);
  EXPECT_THROW(plan_of(few, "prep=warp"), std::invalid_argument);
  EXPECT_THROW(plan_of(few, "schedule=fused,prep=group"), std::invalid_argument);
  const Batch b = Batch::of(prefill(eight, 16, 64));
  const std::string line = sm90::choose(b, 132).describe(b, 132);
  EXPECT_TRUE(test::contains(line, "(520 x 16 CTAs of 128 threads, one per q/k head")) << line;
}

// The slot written by bulk copies where the preparation's grid is more than one wave of four CTAs
// per SM (528 on 132 SMs), else by every thread; a spec's slot_write sets either.
TEST(Sm90Plan, BulkSlotWritesWhereThePreparationHasSeveralWaves) {
  auto bulk = [](std::vector<int64_t> lens, int h, int hv) {
    return sm90::choose(Batch::of(prefill(std::move(lens), h, hv)), 132).bulk_slot_writes;
  };
  EXPECT_TRUE(bulk(std::vector<int64_t>(8, 4096), 16, 64));  // 520 slots x 16 q/k heads
  EXPECT_TRUE(bulk({32768}, 16, 16));                         // 513 x 16 value heads
  EXPECT_FALSE(bulk({2048}, 2, 8));                           // 33 x 8 = 264
  EXPECT_FALSE(bulk({8192}, 2, 8));                           // 129 x 2 = 258 (per q/k head)
  EXPECT_FALSE(bulk({2048}, 16, 32));                         // 33 x 16 = 528: one wave
  EXPECT_TRUE(bulk({4096}, 16, 32));                          // 65 x 16 = 1040
  EXPECT_FALSE(sm90::choose(Batch::of(prefill({32768}, 16, 16)), 132, Schedule::fused).bulk_slot_writes);
  const Batch small = Batch::of(prefill({2048}, 2, 8)), deep = Batch::of(prefill({4096}, 16, 32));
  EXPECT_TRUE(plan_of(small, "slot_write=bulk").bulk_slot_writes);
  EXPECT_FALSE(plan_of(deep, "slot_write=threads").bulk_slot_writes);
  EXPECT_FALSE(plan_of(small, "schedule=fused").bulk_slot_writes);
  for (const char* bad : {"slot_write=tma", "schedule=fused,slot_write=bulk"})
    EXPECT_THROW(plan_of(small, bad), std::invalid_argument) << bad;
  const Batch b = Batch::of(prefill({4096}, 16, 32));
  EXPECT_TRUE(test::contains(sm90::choose(b, 132).describe(b, 132), "MiB workspace, written by bulk copies)"));
}
TEST(Sm90Plan, WarpsAndGridFollowBlockV) {
  const Batch b = Batch::of(prefill({100, 7}, 2, 8));
  Plan p;  // the state warps, then four load warps
  p.block_v = 128;
  EXPECT_EQ(p.warps(), 12);
  EXPECT_EQ(p.state_warps(), 8);
  EXPECT_EQ(p.ctas(b), 1 * 8 * 2);
  p.block_v = 64;
  EXPECT_EQ(p.warps(), 8);
  EXPECT_EQ(p.state_warps(), 4);
  EXPECT_EQ(p.ctas(b), 2 * 8 * 2);
  p.block_v = 32;
  EXPECT_EQ(p.warps(), 6);
  EXPECT_EQ(p.state_warps(), 2);
  EXPECT_EQ(p.ctas(b), 4 * 8 * 2);
  p.seg_chunks = 1;  // one segment slot per 64 tokens, plus one per sequence
  EXPECT_EQ(p.ctas(b), 4 * 8 * (107 / 64 + 2));
  const Plan fused = sm90::choose(b, 132, Schedule::fused);  // the state warpgroups, the preparation, the producer
  EXPECT_EQ(fused.warps(), 16);
  EXPECT_EQ(fused.ctas(b), 8 * 2);
}

TEST(Sm90Plan, SharedMemoryFitsAHopperSm) {
  constexpr int kMaxPerCta = 227 * 1024;
  for (int bv : {32, 64, 128}) {
    const Plan p = two_pass_at(bv);
    EXPECT_LE(p.smem_bytes(), kMaxPerCta) << bv;
    EXPECT_GT(p.smem_bytes(), 48 * 1024) << bv;  // the launch raises the dynamic limit
  }
  const Plan fused = sm90::choose(Batch::of(prefill({100}, 1, 1)), 132, Schedule::fused);
  EXPECT_LE(fused.smem_bytes(), kMaxPerCta);
  EXPECT_GT(fused.smem_bytes(), two_pass_at(128).smem_bytes());  // the scan's layout plus lt
}

TEST(Sm90Plan, LayoutRegionsAreDisjointAndAligned) {
  struct Build {
    int block_v, kernel, stages, buffers;
  };
  for (const Build b : {Build{32, sm90::kScanKernel, 3, 3}, Build{64, sm90::kScanKernel, 3, 3}, Build{128, sm90::kScanKernel, 3, 3},
                        Build{128, sm90::kFusedKernel, 3, 3}, Build{0, sm90::kPrepKernel, 1, 1}}) {
    const int bv = b.block_v;
    const sm90::SmemLayout L(bv, b.kernel);
    EXPECT_EQ(L.stages, b.stages);
    EXPECT_EQ(L.buffers, b.buffers);
    struct Region {
      int at, bytes, align;
    };
    std::vector<Region> regions;
    if (b.kernel != sm90::kScanKernel)  // the scan reads A_g from the workspace: no inverse
      regions = {{L.lt, sm90::kChunk * sm90::kLtStride * 4, 16}};
    if (b.kernel == sm90::kPrepKernel) {
      // L and P_g are written over q and k once the products are in registers: q and k are
      // checked against what is live with them (A_g's region, the scalars) below, not here.
      for (const Region r : {Region{L.q(0), sm90::kQKTileBytes, 1024}, Region{L.k(0), sm90::kQKTileBytes, 1024}})
        for (const Region o : {Region{L.ag(0), sm90::kHalfTileBytes, 1}, Region{L.scalars(0), sm90::kScalarBytes, 1}})
          EXPECT_TRUE(r.at + r.bytes <= o.at || o.at + o.bytes <= r.at) << "q/k against A_g or the scalars";
      EXPECT_EQ(L.k(0), L.q(0) + sm90::kQKTileBytes);
      EXPECT_LE(L.pg(0) + sm90::kHalfTileBytes, 2 * sm90::kQKTileBytes);
    }
    for (int st = 0; b.kernel != sm90::kPrepKernel && st < L.stages; ++st) {
      regions.push_back({L.q(st), sm90::kQKTileBytes, 1024});
      regions.push_back({L.k(st), sm90::kQKTileBytes, 1024});
      regions.push_back({L.v(st), L.v_stage, 16});
    }
    for (int buf = 0; buf < L.buffers; ++buf) {
      regions.push_back({L.ag(buf), sm90::kHalfTileBytes, 1024});
      regions.push_back({L.pg(buf), sm90::kHalfTileBytes, 1024});
      regions.push_back({L.scalars(buf), sm90::kNumScalars * sm90::kChunk * 4, 16});
      regions.push_back({L.exp_G(buf), 4, 4});
    }
    for (size_t i = 0; i < regions.size(); ++i) {
      EXPECT_EQ(regions[i].at % regions[i].align, 0) << "region " << i << " block_v " << bv;
      EXPECT_LE(regions[i].at + regions[i].bytes, L.bytes) << "region " << i;
      for (size_t j = i + 1; j < regions.size(); ++j)
        EXPECT_TRUE(regions[i].at + regions[i].bytes <= regions[j].at || regions[j].at + regions[j].bytes <= regions[i].at)
            << "regions " << i << " and " << j << " overlap at block_v " << bv;
    }
    EXPECT_EQ(sm90::v_row_elems(bv) * 2 % 16, 0) << "v rows keep 16-byte pieces aligned";
  }
}

// The kernels' ldmatrix addresses (lane_offsets.h) against qk_offset of the rows fragments.cuh's
TEST(Sm90Plan, LaneOffsetsGiveTheSwizzledAddresses) {
  for (const uint32_t base : {0u, 1024u, 7u * 1024u}) {
    for (int lane = 0; lane < 32; ++lane) {
      for (int kk = 0; kk < 8; ++kk)
        for (int np = 0; np < 4; ++np) {
          const uint32_t k_side = sm90::half_of(kk) + uint32_t(np) * 2048;
          EXPECT_EQ(((base + sm90::a_lane(lane)) ^ sm90::xor_of(kk)) + k_side,
                    base + sm90::qk_offset(16 * np + (lane & 15), 16 * kk + 8 * (lane >> 4)))
              << "a, lane " << lane << " kk " << kk << " rb " << np;
          EXPECT_EQ(((base + sm90::b_lane(lane)) ^ sm90::xor_of(kk)) + k_side,
                    base + sm90::qk_offset(16 * np + 8 * (lane >> 4) + (lane & 7), 16 * kk + 8 * ((lane >> 3) & 1)))
              << "b, lane " << lane << " kk " << kk << " np " << np;
          // bt: token k-step np (0..3) down the rows, head-dim pair kk (0..7) across the columns.
          EXPECT_EQ(((base + sm90::bt_lane(lane)) ^ sm90::xor_of(kk)) + sm90::half_of(kk) + uint32_t(np) * 2048,
                    base + sm90::qk_offset(16 * np + 8 * ((lane >> 3) & 1) + (lane & 7), 16 * kk + 8 * (lane >> 4)))
              << "bt, lane " << lane << " kk " << kk << " np " << np;
        }
    }
  }
}

TEST(Sm90Plan, SwizzleIsAPermutationAndConflictFreeForLdmatrix) {
  // Every element of a [64][128] tile has its own offset inside the tile.
  std::set<unsigned> offsets;
  for (int r = 0; r < sm90::kChunk; ++r)
    for (int c = 0; c < sm90::kHeadDim; ++c) {
      const unsigned off = sm90::qk_offset(r, c);
      EXPECT_LT(off, unsigned(sm90::kQKTileBytes));
      offsets.insert(off);
    }
  EXPECT_EQ(offsets.size(), size_t(sm90::kChunk * sm90::kHeadDim));
  // 16-byte pieces stay whole (ldmatrix and cp.async move 8 consecutive columns), and the eight
  // rows of one 8 x 8 matrix land in eight different 16-byte bank groups.
  for (int r0 = 0; r0 < sm90::kChunk; r0 += 8)
    for (int c = 0; c < sm90::kHeadDim; c += 8) {
      std::set<unsigned> groups;
      for (int r = r0; r < r0 + 8; ++r) {
        for (int e = 1; e < 8; ++e) EXPECT_EQ(sm90::qk_offset(r, c + e), sm90::qk_offset(r, c) + 2u * unsigned(e));
        groups.insert(sm90::qk_offset(r, c) / 16 % 8);
      }
      EXPECT_EQ(groups.size(), 8u) << "rows " << r0 << ".. column " << c;
    }
}

TEST(Sm90Plan, DeclinesWhatItCannotRunWithTheReason) {
  EXPECT_EQ(sm90::unsupported_reason(prefill({5}, 1, 2)), "");
  Shape k64 = prefill({5}, 1, 2);
  k64.dk = k64.dv = 64;
  EXPECT_TRUE(test::contains(sm90::unsupported_reason(k64), "K = V = 128")) << sm90::unsupported_reason(k64);
  EXPECT_TRUE(test::contains(sm90::unsupported_reason(k64), "64 and 256"));
  Shape v256 = prefill({5}, 1, 2);
  v256.dv = 256;
  EXPECT_NE(sm90::unsupported_reason(v256), "");
  Shape f32 = prefill({5}, 1, 2);
  f32.input_dtype = DType::f32;
  EXPECT_TRUE(test::contains(sm90::unsupported_reason(f32), "bf16 or f16"));
  Shape f16 = prefill({5}, 1, 2);
  f16.input_dtype = DType::f16;
  EXPECT_EQ(sm90::unsupported_reason(f16), "");
  // Every gate form, layout, norm and h0 setting is taken.
  Shape other = prefill({1, 0, 130}, 4, 16);
  other.gate = GateForm::raw, other.layout = Layout::vk, other.l2norm = false, other.has_h0 = false;
  EXPECT_EQ(sm90::unsupported_reason(other), "");
}
TEST(Sm90Plan, PlanSpecSetsItsKnobsAndRejectsTheRest) {
  const Batch b = Batch::of(prefill({32768}, 16, 32));  // the default: two_pass, split at block_v 128
  EXPECT_EQ(plan_of(b, ""), sm90::choose(b, 132));
  EXPECT_EQ(sm90::check_spec(""), "");
  EXPECT_EQ(plan_of(b, "block_v=64").block_v, 64);
  const Plan unsplit = plan_of(b, "cp=off");
  EXPECT_EQ(unsplit, sm90::choose(b, 132, Schedule::two_pass));  // the unsplit plan's own block_v (32)
  const Plan wide = plan_of(b, " cp = off , block_v=128 ");  // spaces around knobs and values are fine
  EXPECT_EQ(wide.block_v, 128);
  EXPECT_EQ(wide.seg_chunks, 0);
  EXPECT_EQ(wide.warps(), 12);
  EXPECT_TRUE(test::contains(wide.describe(b, 132), "two warpgroups")) << wide.describe(b, 132);
  const Plan fused = plan_of(b, "schedule=fused");
  EXPECT_EQ(fused.schedule, Schedule::fused);
  EXPECT_EQ(fused.block_v, 128);
  EXPECT_EQ(fused.seg_chunks, 0);
  EXPECT_EQ(plan_of(b, "schedule=fused,block_v=128,cp=off"), fused);
  for (const char* bad : {"block_v=48", "warps=4", "block_v", "block_v=64,", ",", "block_v=64,block_v=32", "schedule=v3",
                          "kernel=v1", "mma=sync", "slot=packed", "inverse=tf32", "wg_order=free", "schedule=fused,block_v=64",
                          "schedule=fused,cp=8", "schedule=fused,cp_block_v=32", "schedule=fused,pdl=off", "cp=0", "cp=", "cp=x",
                          "cp=-4", "cp=65537", "cp=99999999999", "cp_block_v=128", "cp_block_v=16", "pdl=yes"}) {
    EXPECT_THROW(plan_of(b, bad), std::invalid_argument) << bad;
    EXPECT_NE(sm90::check_spec(bad), "") << bad;
  }
  // The message names the spec, the knob and what it takes.
  EXPECT_TRUE(test::contains(sm90::check_spec("block_v=48"), "prefill/sm90 plan 'block_v=48': block_v=48: expected 32|64|128"))
      << sm90::check_spec("block_v=48");
  EXPECT_TRUE(test::contains(sm90::check_spec("kernel=v1"), "unknown knob 'kernel' (knobs: schedule, block_v, cp, cp_block_v, prep, "
                                                               "slot_write, pdl)"))
      << sm90::check_spec("kernel=v1");
  EXPECT_TRUE(test::contains(sm90::check_spec("cp=x"), "cp=x: cp takes off or a number of chunks per segment")) << sm90::check_spec("cp=x");
  EXPECT_TRUE(test::contains(sm90::check_spec("pdl=on,pdl=off"), "knob 'pdl' is set twice"));
}

TEST(Sm90Plan, ContextParallelBySpec) {
  const Batch one = Batch::of(prefill({32768}, 2, 8));
  EXPECT_GT(sm90::choose(one, 132).seg_chunks, 0);
  EXPECT_EQ(plan_of(one, "cp=off").seg_chunks, 0);
  EXPECT_EQ(plan_of(one, "cp=8").seg_chunks, 8);
  EXPECT_EQ(plan_of(one, "cp=1").seg_chunks, 1);
  const Plan p = plan_of(one, "cp=32,cp_block_v=32");
  EXPECT_EQ(p.seg_chunks, 32);
  EXPECT_EQ(p.cp_block_v, 32);
  EXPECT_EQ(p.ctas(one), int64_t(p.v_blocks(128)) * 8 * (32768 / (64 * 32) + 1));
  EXPECT_TRUE(test::contains(p.describe(one, 132), "transition pass on mma.sync")) << p.describe(one, 132);
  // A split on a shape whose default is fused: the two-pass plan, split.
  const Batch many = Batch::of(prefill(std::vector<int64_t>(8, 4096), 16, 16));
  const Plan split = plan_of(many, "cp=8");
  EXPECT_EQ(split.schedule, Schedule::two_pass);
  EXPECT_EQ(split.seg_chunks, 8);
}

// The split is chosen by the modelled time (plan.h): few heads over one long sequence split (the
// unsplit grid leaves most SMs idle), full grids do not, nor do short sequences.
TEST(Sm90Plan, ContextParallelWhereTheGridIsThin) {
  const Plan few = default_plan({32768}, 2, 8);
  EXPECT_GT(few.seg_chunks, 0);
  EXPECT_EQ(few.schedule, Schedule::two_pass);
  const Batch b = Batch::of(prefill({32768}, 2, 8));
  Plan off = few;
  off.seg_chunks = 0;
  EXPECT_LT(sm90::modeled_scan_us(b, few, 132), 0.9 * sm90::modeled_scan_us(b, off, 132));
  // Unsplit: 32 CTAs of 512 chunks at 1.80 us, plus a CTA's own 5 us.
  EXPECT_NEAR(sm90::modeled_scan_us(b, sm90::choose(b, 132, Schedule::two_pass), 132), 512 * 1.80 + 5, 1e-6);
  EXPECT_GT(default_plan({8192}, 2, 8).seg_chunks, 0);
  EXPECT_GT(default_plan({28672, 4096}, 2, 8).seg_chunks, 0);
  EXPECT_EQ(default_plan({4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096}, 16, 64).seg_chunks, 0);
  EXPECT_EQ(default_plan({32768}, 16, 64).seg_chunks, 0);
  EXPECT_EQ(default_plan({300}, 16, 32).seg_chunks, 0);
  EXPECT_EQ(default_plan({1, 17}, 1, 2).seg_chunks, 0);
  // A grid of at most a quarter of the SMs splits where the split is modelled no slower (2/8 1x2048:
  // 32 CTAs unsplit); 64 CTAs (4/16 1x2048) need the 10 %. No segment is shorter than 8 chunks.
  EXPECT_EQ(default_plan({2048}, 2, 8).seg_chunks, 8);
  EXPECT_EQ(default_plan({2048}, 4, 16).seg_chunks, 0);
  for (const int64_t len : {1024, 2048, 4096, 8192, 32768})
    for (const auto& [hq, hv] : {std::pair{2, 8}, std::pair{4, 16}, std::pair{16, 16}}) {
      const int L = default_plan({len}, hq, hv).seg_chunks;
      EXPECT_TRUE(L == 0 || L >= 8) << hq << "/" << hv << " 1x" << len << ": L = " << L;
    }
  // The plan line says what a split means for the bits.
  const std::string line = few.describe(b, 132);
  EXPECT_TRUE(test::contains(line, "context parallel: segments of")) << line;
  EXPECT_TRUE(test::contains(line, "not batch-invariant")) << line;
  EXPECT_TRUE(test::contains(line, "927 us unsplit")) << line;  // the unsplit plan's own block_v (32)
  EXPECT_FALSE(test::contains(off.describe(b, 132), "context parallel"));
}

// Programmatic dependent launches: the two-pass kernels after the preparation where the plan splits
// or the preparation is one wave, said in the plan line; pdl=on|off by spec; the fused schedule (a
// single launch) takes none.
TEST(Sm90Plan, ProgrammaticDependentsInTheTwoPassSchedule) {
  const Batch b = Batch::of(prefill({2048}, 2, 8));
  const Plan chosen = sm90::choose(b, 132);
  ASSERT_EQ(chosen.schedule, Schedule::two_pass);
  EXPECT_TRUE(chosen.pdl);
  EXPECT_TRUE(test::contains(chosen.describe(b, 132), "each kernel after the first a programmatic dependent"))
      << chosen.describe(b, 132);
  const Plan off = plan_of(b, "pdl=off");
  EXPECT_FALSE(off.pdl);
  EXPECT_NE(off, chosen);
  EXPECT_FALSE(test::contains(off.describe(b, 132), "programmatic"));
  EXPECT_EQ(plan_of(b, "pdl=on"), chosen);
  EXPECT_FALSE(plan_of(b, "schedule=fused").pdl);
  const Batch wide = Batch::of(prefill({4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096}, 16, 16));
  ASSERT_EQ(sm90::choose(wide, 132).schedule, Schedule::fused);
  EXPECT_FALSE(sm90::choose(wide, 132).pdl);
  EXPECT_EQ(plan_of(wide, "pdl=on").schedule, Schedule::two_pass);  // pdl=on names the two-pass schedule
  EXPECT_TRUE(plan_of(wide, "pdl=on").pdl);
  const Batch deep = Batch::of(prefill({8192, 8192, 8192, 8192}, 16, 32));  // 516 x 16 preparation CTAs, unsplit
  ASSERT_EQ(sm90::choose(deep, 132).seg_chunks, 0);
  EXPECT_FALSE(sm90::choose(deep, 132).pdl);
  EXPECT_TRUE(sm90::choose(Batch::of(prefill({2048}, 16, 32)), 132).pdl);  // 33 x 16: one wave
  const Plan split = sm90::choose(Batch::of(prefill({32768}, 16, 32)), 132);
  ASSERT_GT(split.seg_chunks, 0);
  EXPECT_TRUE(split.pdl);
}

// The fused schedule by spec: block_v 128 on wgmma, no split, no workspace.
TEST(Sm90Plan, FusedBySpec) {
  const Batch many = Batch::of(prefill({4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096}, 16, 64));
  const Batch few = Batch::of(prefill({4096}, 2, 8));
  const Plan p = plan_of(many, "schedule=fused"), q = plan_of(few, "schedule=fused");
  EXPECT_EQ(p.schedule, Schedule::fused);
  EXPECT_EQ(p.block_v, 128);
  EXPECT_EQ(q.block_v, 128);
  EXPECT_EQ(p.seg_chunks, 0);
  EXPECT_EQ(p.warps(), 16);
  EXPECT_EQ(p.ctas(many), 64 * 8);
  EXPECT_LE(p.smem_bytes(), 227 * 1024);
  const std::string line = p.describe(many, 132);
  EXPECT_TRUE(test::contains(line, "fused: a preparation warpgroup one chunk ahead")) << line;
  EXPECT_TRUE(test::contains(line, "setmaxnreg 192 / 104 / 24, one wgmma group in flight, issuing in turn (ping-pong)")) << line;
  EXPECT_TRUE(test::contains(line, "the inverse by 8 x 8 eliminations and f16 merges")) << line;
  EXPECT_FALSE(test::contains(line, "MiB workspace")) << line;
}

// The turns of block_v 128's two state warpgroups (ping-pong): in force at block_v 128 in both
// schedules, said in the plan line; one warpgroup (block_v 64) has none.
TEST(Sm90Plan, WarpgroupTurnsAtBlockV128) {
  const Batch many = Batch::of(prefill({4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096}, 16, 32));
  const Plan chosen = sm90::choose(many, 132, Schedule::two_pass);  // (the default there is fused)
  ASSERT_EQ(chosen.block_v, 128);
  EXPECT_TRUE(Plan::pingpong_at(128));
  EXPECT_FALSE(Plan::pingpong_at(64));
  EXPECT_TRUE(test::contains(chosen.describe(many, 132), "setmaxnreg 208 / 88, issuing in turn (ping-pong)"))
      << chosen.describe(many, 132);
  const std::string at64 = plan_of(many, "block_v=64").describe(many, 132);
  EXPECT_TRUE(test::contains(at64, "wgmma (the state warps one warpgroup), f16 operands")) << at64;
  EXPECT_FALSE(test::contains(at64, "ping-pong")) << at64;
  EXPECT_TRUE(test::contains(chosen.describe(many, 132), "KiB smem, 4 per SM")) << chosen.describe(many, 132);
}

// Few long sequences over many value heads split at block_v 128 (two state warpgroups), the
// transition pass at 64. H200, ms: 16/32
// 1x32768 1.300 unsplit at block_v 32 -> 1.014; 8/32 1.181 -> 0.896; 32/32 1.297 -> 1.024. The
// model matches those scans: 921 us unsplit, 633 us split (371 + 235 + 27).
TEST(Sm90Plan, FewLongSequencesSplitAtBlockV128) {
  for (const auto& [h, hv] : std::vector<std::pair<int, int>>{{16, 32}, {8, 32}, {32, 32}}) {
    const Batch b = Batch::of(prefill({32768}, h, hv));
    const Plan p = sm90::choose(b, 132);
    EXPECT_EQ(p.block_v, 128) << h << "/" << hv;
    EXPECT_EQ(p.seg_chunks, 128) << h << "/" << hv;
    EXPECT_EQ(p.cp_block_v, 64) << h << "/" << hv;
    EXPECT_TRUE(p.wgmma_at(128));
    EXPECT_NEAR(sm90::modeled_scan_us(b, p, 132), 633, 0.05 * 633) << p.describe(b, 132);
    EXPECT_NEAR(sm90::modeled_scan_us(b, sm90::choose(b, 132, Schedule::two_pass), 132), 921, 0.03 * 921);
  }
  // Where the H200 said no to short segments at 128 (ms, split at 128 against the choice): 2/8
  // 6144+2048 0.146 against 0.127 (64, segments of 16); 16/16 1x4096 0.146 against 0.128 (64, 16);
  // 16/32 1024+7168 0.342 against 0.327 (unsplit at 64: 160 CTAs at 128 would be two waves).
  EXPECT_EQ(default_plan({6144, 2048}, 2, 8).block_v, 64);
  EXPECT_EQ(default_plan({6144, 2048}, 2, 8).seg_chunks, 16);
  EXPECT_EQ(default_plan({4096}, 16, 16).block_v, 64);
  EXPECT_EQ(default_plan({4096}, 16, 16).seg_chunks, 16);
  EXPECT_EQ(default_plan({1024, 7168}, 16, 32).seg_chunks, 0);
  EXPECT_EQ(default_plan({1024, 7168}, 16, 32).block_v, 64);
  // The measured grid of splits (16/32 1x32768, scan kernels in us) in the model's order: segments
  // of 128 at 128 (633) before 64 at 64 (795), 128 at 64 (758), 256 at 64 (934), unsplit 32 (921).
  const Batch b = Batch::of(prefill({32768}, 16, 32));
  auto model = [&](int bv, int L) {
    Plan q = sm90::choose(b, 132);
    q.block_v = bv, q.seg_chunks = L, q.cp_block_v = 64;
    return sm90::modeled_scan_us(b, q, 132);
  };
  EXPECT_LT(model(128, 128), model(64, 64));
  EXPECT_LT(model(64, 64), model(64, 256));
  EXPECT_LT(model(64, 128), model(64, 256));
}

// A split may take any multiple of 8 that sets a number of segments, not only a power of two, so
// that segments x value heads fill a wave: 8/24 1x32768 takes 5 segments of 104 chunks (120 CTAs
// at block_v 128 on 132 SMs), not 4 of 128 (96 CTAs). H100, same binary: 751 -> 668 us; 8/24
// 24576+8192 778 -> 655 (segments of 96); 1x16384 406 -> 377 (48).
TEST(Sm90Plan, SegmentCountsFillAWave) {
  const Plan p = default_plan({32768}, 8, 24);
  EXPECT_EQ(p.seg_chunks, 104);
  EXPECT_EQ(p.block_v, 128);
  EXPECT_EQ(p.cp_block_v, 64);
  EXPECT_EQ(sm90::segments_of(32768, p.seg_chunks) * 24 * p.v_blocks(128), 120);
  EXPECT_EQ(default_plan({24576, 8192}, 8, 24).seg_chunks, 96);
  // The model places the scan's CTAs in grid order, as the GPU starts them: 8192+24576 at 96 chunks
  // would put the first sequence's 32-chunk segment in the first wave and a 96-chunk one in the
  // second (128 chunk-times, not 96), so it takes 48 (H100: 764 us at 96, 703 at
  // 48).
  EXPECT_EQ(default_plan({8192, 24576}, 8, 24).seg_chunks, 48);
  EXPECT_EQ(default_plan({16384}, 8, 24).seg_chunks, 48);
  // Where a power of two already fills the wave, it stays: 2/8 (16 x 8), 4/16 (8 x 16), 16/32 (4 x 32).
  EXPECT_EQ(default_plan({32768}, 2, 8).seg_chunks, 32);
  EXPECT_EQ(default_plan({32768}, 4, 16).seg_chunks, 64);
  EXPECT_EQ(default_plan({32768}, 16, 32).seg_chunks, 128);
  // Every split segment is a multiple of 8 chunks.
  for (const int hv : {8, 16, 24, 32})
    for (const int64_t len : {2048, 4096, 8192, 16384, 32768}) {
      const int L = default_plan({len}, hv / 4, hv).seg_chunks;
      EXPECT_EQ(L % 8, 0) << hv << " 1x" << len << ": L = " << L;
    }
}

// Segment slots (segments.h) as the workspace's chunk slots: disjoint per sequence, bounded by
// segment_count, one (empty) segment for a zero-length sequence, ceil(len / X) otherwise; and the
// binary search finds every slot's sequence.
TEST(Sm90Segments, SlotsOfSequencesAreDisjointAndBounded) {
  const std::vector<std::vector<int64_t>> batches{
      {1}, {64}, {65}, {0, 0, 0}, {1, 1, 1, 1}, {63, 1, 64, 0, 65, 127, 128, 129}, {32768}, {28672, 4096}, {0, 40, 0, 0, 70, 0}};
  for (const int L : {1, 2, 3, 8, 64})
    for (const auto& lens : batches) {
      std::vector<int64_t> cu{0};
      for (const int64_t len : lens) cu.push_back(cu.back() + len);
      const int64_t T = cu.back(), N = int64_t(lens.size());
      int64_t next_free = 0;
      for (int64_t n = 0; n < N; ++n) {
        const int64_t first = sm90::first_segment(cu[n], n, L), segs = sm90::segments_of(lens[n], L);
        EXPECT_EQ(segs, lens[n] == 0 ? 1 : (lens[n] + 64 * L - 1) / (64 * L));
        EXPECT_GE(first, next_free) << "sequence " << n << ", L " << L;
        for (int64_t s = 0; s < segs; ++s)
          EXPECT_EQ(sm90::sequence_of_slot(first + s, N, [&](int64_t m) { return sm90::first_segment(cu[m], m, L); }), n);
        next_free = first + segs;
      }
      EXPECT_LE(next_free, sm90::segment_count(T, N, L));
    }
  EXPECT_EQ(sm90::segment_count(1000, 7, 0), 7);  // off: one slot per sequence
  EXPECT_EQ(sm90::first_segment(5000, 3, 0), 3);
  EXPECT_EQ(sm90::segments_of(5000, 0), 1);
  EXPECT_EQ(sm90::segment_buffer_bytes(32768, 1, 8, 64), int64_t(9) * 8 * 128 * 128 * 4);
}

TEST(Sm90Plan, RegisteredForSm90aWithItsPlanLineAndKnobs) {
  const Variant* v = Registry::instance().find("prefill/sm90");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->op, OpKind::prefill);
  EXPECT_EQ(v->backend, Backend::cuda);
  EXPECT_EQ(v->min_arch, 90);
  EXPECT_EQ(v->max_arch, 90);
  ASSERT_TRUE(bool(v->plan));
  Shape s = prefill({32768}, 16, 32);
  EXPECT_EQ(v->supports(s), "");
  const std::string line = v->plan(s);
  EXPECT_TRUE(test::contains(line, "chunk 64")) << line;
  EXPECT_TRUE(test::contains(line, "context parallel")) << line;
  s.plan = "cp=off";  // the plan line says what ran: the spec's plan
  const std::string unsplit = v->plan(s);
  EXPECT_EQ(unsplit.find("block_v 32 (6 warps, 2 own the state, 4 load), 128 CTAs on 132 SMs"), std::string("chunk 64, ").size())
      << unsplit;
  // 32768 tokens in one sequence: 513 slots x 32 value heads of 18448 bytes, prepared per q/k head (GVA 2).
  EXPECT_TRUE(test::contains(unsplit, "two_pass: every chunk prepared first (513 x 16 CTAs of 128 threads, one per q/k head")) << unsplit;
  EXPECT_TRUE(test::contains(unsplit, "288.8 MiB workspace, written by bulk copies")) << unsplit;
  EXPECT_TRUE(test::contains(unsplit, "mma.sync, f16 operands")) << unsplit;
  EXPECT_TRUE(test::contains(unsplit, "the inverse by 8 x 8 eliminations and f16 merges")) << unsplit;
  EXPECT_FALSE(test::contains(unsplit, "context parallel")) << unsplit;
  s.plan = "schedule=fused";
  EXPECT_TRUE(test::contains(v->plan(s), "fused: a preparation warpgroup")) << v->plan(s);
  // The knobs, one table: plan_knobs() as Variant::knobs, each with its values and help.
  std::vector<std::string> names;
  for (const PlanKnob& k : v->knobs) {
    names.push_back(k.name);
    EXPECT_FALSE(k.values.empty()) << k.name;
    EXPECT_FALSE(k.help.empty()) << k.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"schedule", "block_v", "cp", "cp_block_v", "prep", "slot_write", "pdl"}));
  ASSERT_TRUE(bool(v->check_plan));
  EXPECT_EQ(v->check_plan("schedule=fused"), "");
  EXPECT_EQ(v->check_plan("cp=8,cp_block_v=32,prep=group,slot_write=bulk,pdl=off,block_v=64,schedule=two_pass"), "");
  EXPECT_TRUE(test::contains(v->check_plan("kernel=v3"), "unknown knob 'kernel'")) << v->check_plan("kernel=v3");
  // A bad spec on a shape is a skip with the reason, not a throw at launch; so is a plan the shape
  // cannot launch (a split too fine for one grid: 4 x 256 x 2097153 scan CTAs).
  s.plan = "block_v=48";
  EXPECT_TRUE(test::contains(v->supports(s), "expected 32|64|128")) << v->supports(s);
  Shape huge = prefill({int64_t(1) << 27}, 64, 256);
  EXPECT_EQ(v->supports(huge), "");
  huge.plan = "cp=1,block_v=32";
  EXPECT_TRUE(test::contains(v->supports(huge), "CTAs in one grid")) << v->supports(huge);
}

// Workspace slots (workspace.h): chunk c of sequence n is slot floor(bos / 64) + n + c; the
// sequences' slot ranges never overlap and stay below slot_count, for any lengths (zero and one
// included).
TEST(Sm90Workspace, SlotsOfSequencesAreDisjointAndBounded) {
  const std::vector<std::vector<int64_t>> batches{
      {1}, {64}, {65}, {0, 0, 0}, {1, 1, 1, 1}, {63, 1, 64, 0, 65, 127, 128, 129}, {32768}, {28672, 4096}, {0, 40, 0, 0, 70, 0}};
  for (const auto& lens : batches) {
    int64_t bos = 0, next_free = 0, T = 0;
    for (const int64_t len : lens) T += len;
    for (size_t n = 0; n < lens.size(); ++n) {
      const int64_t first = sm90::first_slot(bos, int64_t(n)), chunks = (lens[n] + sm90::kChunk - 1) / sm90::kChunk;
      EXPECT_GE(first, next_free) << "sequence " << n;
      next_free = first + chunks;
      bos += lens[n];
    }
    EXPECT_LE(next_free, sm90::slot_count(T, int64_t(lens.size())));
  }
  // A slot is the scan's buffer: A_g, P_g, the scalars; G is gam at the chunk's last token.
  EXPECT_EQ(sm90::kSlotBytes, 2 * 8192 + sm90::kScalarBytes);
  EXPECT_EQ(sm90::kSlotBytes, 18448);
  EXPECT_EQ(sm90::workspace_bytes(32768, 1, 32), int64_t(513) * 32 * sm90::kSlotBytes);
  EXPECT_EQ(sm90::kSlotGOffset, sm90::kSlotScalars + (sm90::kGam * 64 + 63) * 4);
  const sm90::SmemLayout scan(64, sm90::kScanKernel);
  EXPECT_EQ(scan.pg0 - scan.ag0, sm90::kSlotPg);
  EXPECT_EQ(scan.scalars0 - scan.ag0, sm90::kSlotScalars);
}

}  // namespace
}  // namespace gdn

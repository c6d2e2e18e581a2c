// The host half of prefill/sm90 without a GPU: which block_v (and so grid and warps) each call
// gets, the override for an A/B, the shapes it declines and why, the plan line reports record,
// and the shared-memory layout the kernel and the launch agree on (kernels/prefill/sm90/).
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

Shape prefill(std::vector<int64_t> lens, int h_qk, int h_v) {
  Shape s;
  s.op = OpKind::prefill;
  s.seqlens = std::move(lens);
  s.h_qk = h_qk, s.h_v = h_v;
  s.dk = s.dv = 128;
  s.layout = Layout::kv;
  return s;
}

// The default plan (any kernel) on 132 SMs.
Plan default_plan(std::vector<int64_t> lens, int h_qk, int h_v) { return sm90::choose(Batch::of(prefill(std::move(lens), h_qk, h_v)), 132); }

int block_v(std::vector<int64_t> lens, int h_qk, int h_v, int sms = 132, int kernel = sm90::kKernelV1) {
  return sm90::choose(Batch::of(prefill(std::move(lens), h_qk, h_v)), sms, kernel).block_v;
}
int block_v2(std::vector<int64_t> lens, int h_qk, int h_v, int sms = 132) {
  return block_v(std::move(lens), h_qk, h_v, sms, sm90::kKernelV2);
}

TEST(Sm90Plan, DefaultIsV3WithV2sBlockVWhereOneWaveFits) {
  const Batch one = Batch::of(prefill({32768}, 16, 32));  // 128 CTAs at block_v 32
  Plan v3_32{32, sm90::kKernelV3}, v3_64{64, sm90::kKernelV3};
  v3_32.wgmma = v3_64.wgmma = true;  // wgmma where block_v is 64 or 128, mma.sync at 32
  v3_32.inverse = v3_64.inverse = sm90::kInverseHier;  // v3's preparation inverts by the hier form
  v3_32.prep_group = v3_64.prep_group = true;           // GVA 2, 513 and 130 slots x 16 q/k heads
  v3_32.bulk_slot_writes = v3_64.bulk_slot_writes = true;  // 8208 and 2080 preparation CTAs: several waves
  EXPECT_EQ(sm90::choose(one, 132, sm90::kKernelV3), v3_32);  // unsplit; the default splits it (below)
  EXPECT_FALSE(sm90::choose(one, 132, sm90::kKernelV3).wgmma_at(32));
  EXPECT_EQ(sm90::choose(one, 132, sm90::kKernelV3).block_v, sm90::choose(one, 132, sm90::kKernelV2).block_v);
  const Batch two = Batch::of(prefill({4096, 4096}, 16, 32));  // 128 CTAs at block_v 64
  EXPECT_EQ(sm90::choose(two, 132), v3_64);
  EXPECT_TRUE(sm90::choose(two, 132).wgmma_at(64));
  EXPECT_EQ(sm90::choose(two, 132, sm90::kKernelV3).block_v, sm90::choose(two, 132, sm90::kKernelV2).block_v);
}

// Kernel v4 at block_v 128 by default where GVA is 1, v3 would not split, one CTA per (sequence,
// value head) fills 0.9 of the SMs and no sequence is longer than twice the mean (H100, tenth
// session: 0.81-0.83x v3 on the six such qwen35 cells), and at GVA 2 where that grid is 1.8 x the
// SMs (twelfth session: 0.92-0.98x on 16/32 1024x8 and 4096x8); v3 everywhere else. An override naming a
// field only v3 has starts from v3's choice.
TEST(Sm90Plan, FusedV4WhereGvaIsOneAndItsGridFillsTheGpu) {
  for (const auto& [lens, h] : std::vector<std::pair<std::vector<int64_t>, int>>{
           {std::vector<int64_t>(8, 1024), 16}, {std::vector<int64_t>(8, 4096), 16}, {std::vector<int64_t>(4, 8192), 32},
           {std::vector<int64_t>(4, 2048), 32}, {std::vector<int64_t>(8, 1024), 32}, {{5000, 3000, 4000, 4000}, 32}}) {
    const Plan p = default_plan(lens, h, h);
    EXPECT_EQ(p.kernel, sm90::kKernelV4) << h << " heads, " << lens.size() << " sequences";
    EXPECT_EQ(p.block_v, 128);
    EXPECT_EQ(p.inverse, sm90::kInverseHier);
    EXPECT_TRUE(p.pingpong_at(128));
  }
  EXPECT_EQ(default_plan(std::vector<int64_t>(4, 2048), 16, 16).kernel, sm90::kKernelV3);    // 64 CTAs at 128
  EXPECT_EQ(default_plan(std::vector<int64_t>(8, 1024), 16, 32).kernel, sm90::kKernelV4);    // GVA 2, 256 CTAs
  EXPECT_EQ(default_plan(std::vector<int64_t>(8, 4096), 16, 32).kernel, sm90::kKernelV4);
  EXPECT_EQ(default_plan(std::vector<int64_t>(4, 8192), 16, 32).kernel, sm90::kKernelV3);    // GVA 2, one wave
  EXPECT_EQ(default_plan(std::vector<int64_t>(4, 2048), 16, 32).kernel, sm90::kKernelV3);
  EXPECT_EQ(default_plan(std::vector<int64_t>(8, 4096), 8, 32).kernel, sm90::kKernelV3);     // GVA 4
  EXPECT_EQ(default_plan({32768}, 16, 16).kernel, sm90::kKernelV3);                          // 16 CTAs, split
  EXPECT_EQ(default_plan({30000, 100, 100, 100, 100, 100, 100, 100}, 32, 32).kernel, sm90::kKernelV3);  // one long chain
  EXPECT_EQ(default_plan({2000, 1000, 1000, 1000}, 32, 32).kernel, sm90::kKernelV4);  // 1.6x the mean
  // 119 CTAs of 132 is 0.9: in; 118 is not.
  const Batch in = Batch::of(prefill(std::vector<int64_t>(7, 1024), 17, 17)), out = Batch::of(prefill(std::vector<int64_t>(2, 1024), 59, 59));
  EXPECT_TRUE(sm90::fused_v4_wins(in, sm90::choose(in, 132, sm90::kKernelV3), 132));
  EXPECT_FALSE(sm90::fused_v4_wins(out, sm90::choose(out, 132, sm90::kKernelV3), 132));
  const Batch many = Batch::of(prefill(std::vector<int64_t>(8, 4096), 16, 16));
  EXPECT_TRUE(test::contains(sm90::choose(many, 132).describe(many, 132), "kernel v4: fused")) << sm90::choose(many, 132).describe(many, 132);
  {
    test::ScopedEnv env("GDNBENCH_SM90_PLAN", "slot=packed");  // a v3 field: v3's choice, packed
    const Plan p = sm90::plan_for(many, 132);
    EXPECT_EQ(p.kernel, sm90::kKernelV3);
    EXPECT_EQ(p.slot, sm90::kSlotPacked);
  }
  {
    test::ScopedEnv env("GDNBENCH_SM90_PLAN", "kernel=v3");
    EXPECT_EQ(sm90::plan_for(many, 132), sm90::choose(many, 132, sm90::kKernelV3));
  }
  {
    test::ScopedEnv env("GDNBENCH_SM90_PLAN", "wg_order=free");  // no v3 field: the default, v4
    const Plan p = sm90::plan_for(many, 132);
    EXPECT_EQ(p.kernel, sm90::kKernelV4);
    EXPECT_FALSE(p.pingpong_at(128));
  }
}

// v3 after the one-wave rule: block_v 128 where several waves at 64 become fewer, fuller waves
// (H200: 16/64 4096x8 1.810 -> 1.557 ms, 16/64 16384x2 1.807 -> 1.507, 16/32 1024x8 0.259 ->
// 0.224), not where one wave of 128 CTAs at 64 would become 64 CTAs (16/32 16384x2 0.916 ->
// 1.118, 16/64 1x32768 1.798 -> 2.201).
int block_v3(std::vector<int64_t> lens, int h, int hv) {
  return sm90::choose(Batch::of(prefill(lens, h, hv)), 132, sm90::kKernelV3).block_v;
}
TEST(Sm90Plan, V3TakesBlockV128WhereItShortensTheWaves) {
  const std::vector<int64_t> eight(8, 4096), two(2, 16384), eight_small(8, 1024);
  EXPECT_EQ(block_v3(eight, 16, 64), 128);
  EXPECT_EQ(block_v3(eight, 16, 32), 128);
  EXPECT_EQ(block_v3(eight, 8, 32), 128);
  EXPECT_EQ(block_v3(two, 16, 64), 128);
  EXPECT_EQ(block_v3(eight_small, 16, 32), 128);
  EXPECT_EQ(block_v3(two, 16, 32), 64);   // 128 CTAs at 64: one wave
  EXPECT_EQ(block_v3({32768}, 16, 64), 64);
  EXPECT_EQ(block_v3(eight_small, 2, 8), 64);
  EXPECT_EQ(block_v3({4096, 4096}, 16, 32), 64);
  EXPECT_EQ(block_v3({32768}, 16, 32), 32);
  EXPECT_TRUE(sm90::choose(Batch::of(prefill(eight, 16, 64)), 132).wgmma_at(128));
}

// The preparation per q/k head where GVA is 2 or more and its grid has one and a half CTAs per SM
// (prep_kernel.cuh; each CTA prepares its GVA value heads in turn; H100: 130-132 CTAs lose, 258 win).
bool prep_group(std::vector<int64_t> lens, int h, int hv) {  // v3's choice (16/32 4096x8 is v4's)
  const Batch b = Batch::of(prefill(lens, h, hv));
  return sm90::choose_context_parallel(b, sm90::choose(b, 132, sm90::kKernelV3), 132).prep_group;
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
  const Plan chosen{64, sm90::kKernelV3};
  EXPECT_TRUE(sm90::apply_override(chosen, "prep=group").prep_group);
  EXPECT_FALSE(sm90::apply_override(sm90::apply_override(chosen, "prep=group"), "prep=head").prep_group);
  EXPECT_THROW(sm90::apply_override(chosen, "prep=warp"), std::invalid_argument);
  EXPECT_THROW(sm90::apply_override(chosen, "kernel=v1,prep=group"), std::invalid_argument);
  const Batch b = Batch::of(prefill(eight, 16, 64));
  const std::string line = sm90::choose(b, 132).describe(b, 132);
  EXPECT_TRUE(test::contains(line, "(520 x 16 CTAs of 128 threads, one per q/k head")) << line;
}

// The slot written by bulk copies where the preparation's grid is more than one wave of four CTAs
// per SM (528 on 132 SMs), else by every thread; slot_write overrides either way.
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
  EXPECT_FALSE(sm90::choose(Batch::of(prefill({32768}, 16, 16)), 132, sm90::kKernelV1).bulk_slot_writes);
  const Plan chosen = sm90::choose(Batch::of(prefill({2048}, 2, 8)), 132);
  EXPECT_TRUE(sm90::apply_override(chosen, "slot_write=bulk").bulk_slot_writes);
  EXPECT_FALSE(sm90::apply_override(sm90::apply_override(chosen, "slot_write=bulk"), "slot_write=threads").bulk_slot_writes);
  EXPECT_FALSE(sm90::apply_override(sm90::apply_override(chosen, "slot_write=bulk"), "kernel=v1").bulk_slot_writes);
  for (const char* bad : {"slot_write=tma", "kernel=v4,slot_write=bulk"})
    EXPECT_THROW(sm90::apply_override(chosen, bad), std::invalid_argument) << bad;
  const Batch b = Batch::of(prefill({4096}, 16, 32));
  EXPECT_TRUE(test::contains(sm90::choose(b, 132).describe(b, 132), "of full slots, written by bulk copies)"));
}

TEST(Sm90Plan, V2BlockVIsTheSmallestWhoseGridFitsOneWaveElse64) {
  EXPECT_EQ(block_v2({32768}, 2, 8), 32);
  EXPECT_EQ(block_v2({32768}, 16, 32), 32);
  EXPECT_EQ(block_v2({32768}, 16, 48), 64);
  EXPECT_EQ(block_v2({4096, 4096}, 16, 32), 64);   // 128 CTAs
  EXPECT_EQ(block_v2({28672, 4096}, 16, 64), 64);  // 256 CTAs: two waves (v1 takes 128)
  EXPECT_EQ(block_v2({4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096}, 16, 64), 64);
  EXPECT_EQ(block_v2({32768}, 16, 32, 0), 32);
}

TEST(Sm90Plan, BlockVIsTheSmallestWhoseGridFitsOneWave) {
  // One sequence: 4 V-blocks of 32 per head while 4 x HV <= 132.
  EXPECT_EQ(block_v({32768}, 2, 8), 32);    // 32 CTAs (the rest of the GPU idles until CP exists)
  EXPECT_EQ(block_v({32768}, 16, 32), 32);  // 128 CTAs
  EXPECT_EQ(block_v({2048}, 8, 24), 32);    // 96 CTAs
  EXPECT_EQ(block_v({32768}, 16, 48), 64);  // 4 x 48 = 192 > 132: 2 x 48 = 96
  EXPECT_EQ(block_v({32768}, 16, 64), 64);  // 128 CTAs
  EXPECT_EQ(block_v({28672, 4096}, 16, 64), 128);  // 2 x 64 = 128 CTAs at 128 columns
  EXPECT_EQ(block_v({4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096}, 16, 32), 128);  // 256 CTAs: two waves
  // Fewer SMs, fewer splits; an unknown count plans for an H100/H200.
  EXPECT_EQ(block_v({32768}, 16, 32, 100), 64);
  EXPECT_EQ(block_v({32768}, 16, 32, 0), 32);
  // Zero-length sequences still get their CTAs (they copy h0 to ht).
  const Batch zero_lengths = Batch::of(prefill({0, 5, 0}, 1, 4));
  EXPECT_EQ(sm90::choose(zero_lengths, 132, sm90::kKernelV1).ctas(zero_lengths), 4 * 3 * 4);
}

TEST(Sm90Plan, WarpsAndGridFollowBlockV) {
  const Batch b = Batch::of(prefill({100, 7}, 2, 8));
  Plan p;
  p.block_v = 128;
  EXPECT_EQ(p.warps(), 8);
  EXPECT_EQ(p.state_warps(), 8);
  EXPECT_EQ(p.ctas(b), 1 * 8 * 2);
  p.block_v = 64;
  EXPECT_EQ(p.warps(), 4);
  EXPECT_EQ(p.state_warps(), 4);
  EXPECT_EQ(p.ctas(b), 2 * 8 * 2);
  p.block_v = 32;
  EXPECT_EQ(p.warps(), 4);  // two own the state, all four share the chunk's preparation
  EXPECT_EQ(p.state_warps(), 2);
  EXPECT_EQ(p.ctas(b), 4 * 8 * 2);
  // v2: the state warps, then four prep warps.
  p.kernel = sm90::kKernelV2;
  EXPECT_EQ(p.warps(), 6);
  EXPECT_EQ(p.state_warps(), 2);
  EXPECT_EQ(p.ctas(b), 4 * 8 * 2);
  p.block_v = 64;
  EXPECT_EQ(p.warps(), 8);
  EXPECT_EQ(p.state_warps(), 4);
}

TEST(Sm90Plan, SharedMemoryFitsAHopperSm) {
  constexpr int kSmemPerSm = 228 * 1024, kPerCtaReserve = 1024, kMaxPerCta = 227 * 1024;
  for (int bv : {32, 64, 128}) {
    Plan p;
    p.block_v = bv;
    EXPECT_LE(p.smem_bytes(), kMaxPerCta) << bv;
    EXPECT_GT(p.smem_bytes(), 48 * 1024) << bv;  // the launch raises the dynamic limit
  }
  for (int bv : {32, 64}) {
    const Plan v1{bv, sm90::kKernelV1}, v2{bv, sm90::kKernelV2};
    EXPECT_LE(v2.smem_bytes(), kMaxPerCta) << bv;
    EXPECT_GT(v2.smem_bytes(), v1.smem_bytes()) << bv;  // a third stage, two buffers
  }
  Plan small;
  small.block_v = 32;
  EXPECT_LE(2 * (small.smem_bytes() + kPerCtaReserve), kSmemPerSm) << "two block_v = 32 CTAs fit one SM";
}

TEST(Sm90Plan, LayoutRegionsAreDisjointAndAligned) {
  struct Build {
    int block_v, kernel, stages, buffers;
  };
  for (const Build b : {Build{32, 1, 2, 1}, Build{64, 1, 2, 1}, Build{128, 1, 2, 1}, Build{32, 2, 3, 2}, Build{64, 2, 3, 2},
                        Build{32, 3, 3, 3}, Build{64, 3, 3, 3}, Build{0, sm90::kPrepKernel, 1, 1}}) {
    const int bv = b.block_v;
    const sm90::SmemLayout L(bv, b.kernel);
    EXPECT_EQ(L.stages, b.stages);
    EXPECT_EQ(L.buffers, b.buffers);
    struct Region {
      int at, bytes, align;
    };
    std::vector<Region> regions;
    if (b.kernel != sm90::kKernelV3)  // v3's scan reads A_g from the workspace: no inverse
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
// a_rows / b_rows / bt_rows name, for every lane, k-step and tile, on a 1024-byte aligned base.
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

TEST(Sm90Plan, OverrideReplacesBlockVAndRejectsTheRest) {
  Plan chosen;
  chosen.block_v = 32;
  EXPECT_EQ(sm90::apply_override(chosen, "block_v=128").block_v, 128);
  EXPECT_EQ(sm90::apply_override(chosen, "block_v=64").block_v, 64);
  EXPECT_EQ(sm90::apply_override(chosen, "").block_v, 32);
  EXPECT_THROW(sm90::apply_override(chosen, "block_v=48"), std::invalid_argument);
  EXPECT_THROW(sm90::apply_override(chosen, "warps=4"), std::invalid_argument);
  EXPECT_THROW(sm90::apply_override(chosen, "block_v"), std::invalid_argument);
  EXPECT_EQ(sm90::apply_override(chosen, "kernel=v1").kernel, sm90::kKernelV1);
  EXPECT_EQ(sm90::apply_override(chosen, "kernel=v2,block_v=64"), (Plan{64, sm90::kKernelV2}));
  EXPECT_EQ(sm90::apply_override(chosen, "block_v=64,kernel=v1"), (Plan{64, sm90::kKernelV1}));
  EXPECT_EQ(sm90::apply_override(chosen, "kernel=v3,block_v=64"), (Plan{64, sm90::kKernelV3}));
  EXPECT_THROW(sm90::apply_override(chosen, "kernel=v4"), std::invalid_argument);
  EXPECT_THROW(sm90::apply_override(chosen, "kernel=v2,block_v=128"), std::invalid_argument);  // no such kernel
  EXPECT_THROW(sm90::apply_override(chosen, "kernel=v3,block_v=128"), std::invalid_argument);  // chosen: mma.sync
  EXPECT_THROW(sm90::apply_override(chosen, "kernel=v2,"), std::invalid_argument);
  // wgmma: kernel v3 only, used by the passes at block_v 64 (the plan line says which).
  const Plan wg = sm90::apply_override(chosen, "kernel=v3,block_v=64,mma=wgmma");
  EXPECT_TRUE(wg.wgmma);
  EXPECT_TRUE(wg.wgmma_at(64));
  EXPECT_FALSE(wg.wgmma_at(32));
  EXPECT_FALSE(sm90::apply_override(wg, "mma=sync").wgmma);
  EXPECT_NE(wg, (Plan{64, sm90::kKernelV3}));
  EXPECT_THROW(sm90::apply_override(chosen, "kernel=v1,mma=wgmma"), std::invalid_argument);
  EXPECT_THROW(sm90::apply_override(chosen, "kernel=v3,mma=tcgen05"), std::invalid_argument);
  EXPECT_FALSE(sm90::apply_override(wg, "kernel=v1").wgmma);  // another kernel drops it
  // block_v 128 in v3: two state warpgroups, on wgmma only (override; choose() stops at 64).
  const Plan wide = sm90::apply_override(chosen, "kernel=v3,block_v=128,mma=wgmma");
  EXPECT_EQ(wide.block_v, 128);
  EXPECT_TRUE(wide.wgmma_at(128));
  EXPECT_EQ(wide.warps(), 12);
  EXPECT_THROW(sm90::apply_override(wide, "mma=sync"), std::invalid_argument);
  const Batch b = Batch::of(prefill({32768}, 16, 32));
  {
    test::ScopedEnv env("GDNBENCH_SM90_PLAN", "block_v=128");
    const Plan p = sm90::plan_for(b, 132);  // the default kernel v3 on wgmma: two state warpgroups
    EXPECT_EQ(p.block_v, 128);
    EXPECT_TRUE(p.wgmma_at(128));
    EXPECT_TRUE(test::contains(p.describe(b, 132), "two warpgroups")) << p.describe(b, 132);
  }
  {
    test::ScopedEnv env("GDNBENCH_SM90_PLAN", "kernel=v1,block_v=128");
    EXPECT_EQ(sm90::plan_for(b, 132), (Plan{128, sm90::kKernelV1}));
  }
  {  // the kernel alone: that kernel's own choice of block_v
    const Batch many = Batch::of(prefill({4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096}, 16, 64));
    test::ScopedEnv v1("GDNBENCH_SM90_PLAN", "kernel=v1");
    EXPECT_EQ(sm90::plan_for(many, 132), (Plan{128, sm90::kKernelV1}));
    test::ScopedEnv v2("GDNBENCH_SM90_PLAN", "kernel=v2");
    EXPECT_EQ(sm90::plan_for(many, 132), (Plan{64, sm90::kKernelV2}));
  }
  EXPECT_EQ(sm90::plan_for(b, 132), sm90::choose(b, 132));
}

TEST(Sm90Plan, ContextParallelOverride) {
  Plan v3{32, sm90::kKernelV3};
  EXPECT_EQ(sm90::apply_override(v3, "cp=8").seg_chunks, 8);
  EXPECT_EQ(sm90::apply_override(v3, "cp=8,cp_block_v=32").cp_block_v, 32);
  EXPECT_EQ(sm90::apply_override(v3, "cp=1").seg_chunks, 1);
  Plan split = v3;
  split.seg_chunks = 16;
  EXPECT_EQ(sm90::apply_override(split, "cp=off").seg_chunks, 0);
  EXPECT_EQ(sm90::apply_override(split, "").seg_chunks, 16);
  EXPECT_EQ(sm90::apply_override(split, "kernel=v1").seg_chunks, 0);  // v1 has no split
  for (const char* bad : {"cp=0", "cp=", "cp=x", "cp=-4", "cp=65537", "cp=99999999999", "cp_block_v=128", "cp_block_v=16"})
    EXPECT_THROW(sm90::apply_override(v3, bad), std::invalid_argument) << bad;
  EXPECT_THROW(sm90::apply_override(v3, "kernel=v2,cp=4"), std::invalid_argument);
  try {
    sm90::apply_override(v3, "cp=x");
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(test::contains(e.what(), "cp=x")) << e.what();
  }
  const Batch one = Batch::of(prefill({32768}, 2, 8));
  test::ScopedEnv env("GDNBENCH_SM90_PLAN", "cp=off");
  EXPECT_EQ(sm90::plan_for(one, 132).seg_chunks, 0);
  test::ScopedEnv env2("GDNBENCH_SM90_PLAN", "kernel=v3,cp=32,cp_block_v=32");
  const Plan p = sm90::plan_for(one, 132);
  EXPECT_EQ(p.seg_chunks, 32);
  EXPECT_EQ(p.cp_block_v, 32);
  EXPECT_EQ(p.ctas(one), int64_t(p.v_blocks(128)) * 8 * (32768 / (64 * 32) + 1));
}

// The split is chosen by the modelled time (plan.h): few heads over one long sequence split (the
// unsplit grid leaves most SMs idle), full grids do not, nor do short sequences.
TEST(Sm90Plan, ContextParallelWhereTheGridIsThin) {
  const Plan few = default_plan({32768}, 2, 8);
  EXPECT_GT(few.seg_chunks, 0);
  EXPECT_EQ(few.kernel, sm90::kKernelV3);
  const Batch b = Batch::of(prefill({32768}, 2, 8));
  Plan off = few;
  off.seg_chunks = 0;
  EXPECT_LT(sm90::modeled_scan_us(b, few, 132), 0.9 * sm90::modeled_scan_us(b, off, 132));
  // Unsplit: 32 CTAs of 512 chunks at 1.80 us, plus a CTA's own 5 us.
  EXPECT_NEAR(sm90::modeled_scan_us(b, sm90::choose(b, 132, sm90::kKernelV3), 132), 512 * 1.80 + 5, 1e-6);
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

// Programmatic dependent launches: v3's kernels after the preparation where it splits or the
// preparation is one wave, said in the plan line; pdl=on|off by override; no other kernel (a single
// launch) takes them.
TEST(Sm90Plan, ProgrammaticDependentsInKernelV3) {
  const Batch b = Batch::of(prefill({2048}, 2, 8));
  const Plan chosen = sm90::choose(b, 132);
  ASSERT_EQ(chosen.kernel, sm90::kKernelV3);
  EXPECT_TRUE(chosen.pdl);
  EXPECT_TRUE(test::contains(chosen.describe(b, 132), "each kernel after the first a programmatic dependent"))
      << chosen.describe(b, 132);
  const Plan off = sm90::apply_override(chosen, "pdl=off");
  EXPECT_FALSE(off.pdl);
  EXPECT_NE(off, chosen);
  EXPECT_FALSE(test::contains(off.describe(b, 132), "programmatic"));
  EXPECT_EQ(sm90::apply_override(off, "pdl=on"), chosen);
  EXPECT_FALSE(sm90::apply_override(chosen, "kernel=v4,block_v=64").pdl);
  EXPECT_FALSE(sm90::choose(b, 132, sm90::kKernelV1).pdl);
  EXPECT_THROW(sm90::apply_override(chosen, "kernel=v1,pdl=on"), std::invalid_argument);
  EXPECT_THROW(sm90::apply_override(chosen, "pdl=yes"), std::invalid_argument);
  const Batch wide = Batch::of(prefill({4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096}, 16, 16));
  ASSERT_EQ(sm90::choose(wide, 132).kernel, sm90::kKernelV4);
  EXPECT_FALSE(sm90::choose(wide, 132).pdl);
  const Batch deep = Batch::of(prefill({8192, 8192, 8192, 8192}, 16, 32));  // 516 x 16 preparation CTAs, unsplit
  ASSERT_EQ(sm90::choose(deep, 132).seg_chunks, 0);
  EXPECT_FALSE(sm90::choose(deep, 132).pdl);
  EXPECT_TRUE(sm90::choose(Batch::of(prefill({2048}, 16, 32)), 132).pdl);  // 33 x 16: one wave
  const Plan split = sm90::choose(Batch::of(prefill({32768}, 16, 32)), 132);
  ASSERT_GT(split.seg_chunks, 0);
  EXPECT_TRUE(split.pdl);
}

// Kernel v4 (fused, override only): block_v 64 or 128 on wgmma, no split, no workspace; plan_for
// picks its own block_v (one wave at 64, else 128).
TEST(Sm90Plan, FusedV4Override) {
  const Batch many = Batch::of(prefill({4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096}, 16, 64));
  const Batch few = Batch::of(prefill({4096}, 2, 8));
  {
    test::ScopedEnv env("GDNBENCH_SM90_PLAN", "kernel=v4");
    const Plan p = sm90::plan_for(many, 132), q = sm90::plan_for(few, 132);
    EXPECT_EQ(p.kernel, sm90::kKernelV4);
    EXPECT_EQ(p.block_v, 128);  // 1024 CTAs at 64: no wave fits, so one CTA per head
    EXPECT_TRUE(p.wgmma_at(128));
    EXPECT_EQ(p.seg_chunks, 0);
    EXPECT_EQ(q.block_v, 64);  // 16 CTAs at 64 fit one wave
    EXPECT_EQ(p.warps(), 12);
    EXPECT_EQ(p.ctas(many), 64 * 8);
    EXPECT_LE(p.smem_bytes(), 227 * 1024);
    const std::string line = p.describe(many, 132);
    EXPECT_TRUE(test::contains(line, "kernel v4: fused")) << line;
    EXPECT_TRUE(test::contains(line, "setmaxnreg 192 / 120")) << line;
    EXPECT_FALSE(test::contains(line, "MiB workspace")) << line;
  }
  const Plan chosen = sm90::choose(many, 132);
  for (const char* bad : {"kernel=v4,block_v=32", "kernel=v4,mma=sync", "kernel=v4,cp=8", "kernel=v4,prep=group", "kernel=v5"})
    EXPECT_THROW(sm90::apply_override(chosen, bad), std::invalid_argument) << bad;
  EXPECT_EQ(sm90::apply_override(chosen, "kernel=v4,block_v=64").block_v, 64);
  EXPECT_TRUE(sm90::apply_override(chosen, "kernel=v4,block_v=64").wgmma_at(64));
}

// The turns of block_v 128's two state warpgroups (ping-pong): chosen for v3 and v4, in force only
// at block_v 128 on wgmma, said in the plan line; wg_order=free turns them off, and no other kernel
// takes them.
TEST(Sm90Plan, WarpgroupTurnsAtBlockV128) {
  const Batch many = Batch::of(prefill({4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096}, 16, 32));
  const Plan chosen = sm90::choose(many, 132, sm90::kKernelV3);  // (the default there is v4)
  ASSERT_EQ(chosen.block_v, 128);
  EXPECT_TRUE(chosen.pingpong_at(128));
  EXPECT_TRUE(test::contains(chosen.describe(many, 132), "setmaxnreg 208 / 88, issuing in turn (ping-pong)"))
      << chosen.describe(many, 132);
  const Plan free = sm90::apply_override(chosen, "wg_order=free");
  EXPECT_FALSE(free.pingpong_at(128));
  EXPECT_FALSE(test::contains(free.describe(many, 132), "ping-pong")) << free.describe(many, 132);
  EXPECT_NE(free, chosen);
  EXPECT_EQ(sm90::apply_override(free, "wg_order=pingpong"), chosen);
  // At block_v 64 (one warpgroup) the flag changes nothing, so the plans are equal.
  const Plan at64 = sm90::apply_override(chosen, "block_v=64");
  EXPECT_FALSE(at64.pingpong_at(64));
  EXPECT_EQ(sm90::apply_override(at64, "wg_order=free"), at64);
  const Plan v4 = sm90::apply_override(chosen, "kernel=v4,block_v=128");
  EXPECT_TRUE(v4.pingpong_at(128));
  EXPECT_TRUE(test::contains(v4.describe(many, 132), "setmaxnreg 192 / 120, one wgmma group in flight, issuing in turn"))
      << v4.describe(many, 132);
  EXPECT_FALSE(sm90::apply_override(chosen, "kernel=v1,block_v=128").pingpong);
  EXPECT_THROW(sm90::apply_override(chosen, "kernel=v1,wg_order=pingpong"), std::invalid_argument);
  EXPECT_THROW(sm90::apply_override(chosen, "wg_order=alternate"), std::invalid_argument);
}

// The slot's forms and the inverse's forms: kernel v3 only; the hier inverse is chosen (ninth
// session), the packed and lean slots and the other inverses by override only, each key replacing
// its field alone; the plan line says which.
TEST(Sm90Plan, SlotAndInverseOverrides) {
  const Batch many = Batch::of(prefill({4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096}, 16, 32));
  const Plan chosen = sm90::choose(many, 132, sm90::kKernelV3);  // (the default there is v4)
  EXPECT_EQ(chosen.slot, sm90::kSlotFull);
  EXPECT_EQ(chosen.inverse, sm90::kInverseHier);
  EXPECT_EQ(sm90::choose(many, 132, sm90::kKernelV1).inverse, sm90::kInverseTf32);  // v1, v2 keep TF32
  EXPECT_EQ(sm90::choose(many, 132, sm90::kKernelV4).inverse, sm90::kInverseHier);  // v4 takes hier (tenth session)
  const Plan packed = sm90::apply_override(chosen, "slot=packed");
  EXPECT_EQ(packed.slot, sm90::kSlotPacked);
  EXPECT_EQ(packed.inverse, sm90::kInverseHier);
  EXPECT_EQ(packed.block_v, chosen.block_v);
  EXPECT_FALSE(packed == chosen);
  EXPECT_EQ(sm90::apply_override(packed, "slot=full").slot, sm90::kSlotFull);
  const Plan both = sm90::apply_override(chosen, "inverse=f16,slot=packed,prep=group");
  EXPECT_TRUE(both.slot == sm90::kSlotPacked && both.prep_group);
  EXPECT_EQ(both.inverse, sm90::kInverseF16);
  EXPECT_EQ(sm90::apply_override(both, "inverse=tf32").inverse, sm90::kInverseTf32);
  EXPECT_EQ(sm90::apply_override(both, "inverse=hier").inverse, sm90::kInverseHier);
  EXPECT_TRUE(test::contains(sm90::apply_override(both, "inverse=hier").describe(many, 132),
                             "the inverse by 8 x 8 eliminations and f16 merges"));
  const std::string line = both.describe(many, 132);
  EXPECT_TRUE(test::contains(line, "the inverse by 16 x 16 solves and f16 merges")) << line;
  // 32768 tokens, 8 sequences: 520 slots x 32 heads of 10112 bytes.
  EXPECT_TRUE(test::contains(line, "160.5 MiB workspace of packed slots")) << line;
  for (const char* bad : {"slot=half", "inverse=bf16", "merges=f16", "kernel=v1,slot=packed", "kernel=v4,inverse=f16",
                          "kernel=v2,inverse=hier", "kernel=v2,slot=packed", "kernel=v4,slot=packed", "kernel=v4,slot=lean",
                          "slot=lean,inverse=f16", "prep_ctas=5"})
    EXPECT_THROW(sm90::apply_override(chosen, bad), std::invalid_argument) << bad;
  // The lean slot: A_g and the vectors, P_g made by the scan; 520 slots x 32 heads of 10368 bytes.
  const Plan lean = sm90::apply_override(chosen, "slot=lean");
  EXPECT_EQ(lean.slot, sm90::kSlotLean);
  EXPECT_FALSE(lean == chosen);
  EXPECT_TRUE(test::contains(lean.describe(many, 132), "164.5 MiB workspace of lean (P_g made by the scan's load warps) slots"))
      << lean.describe(many, 132);
  EXPECT_EQ(sm90::apply_override(lean, "slot=packed").slot, sm90::kSlotPacked);  // one form at a time
  EXPECT_EQ(sm90::apply_override(packed, "slot=lean").slot, sm90::kSlotLean);
  EXPECT_EQ(sm90::apply_override(lean, "slot=full").slot, sm90::kSlotFull);
  EXPECT_EQ(sm90::apply_override(lean, "kernel=v1").slot, sm90::kSlotFull);
  EXPECT_EQ(sm90::apply_override(packed, "kernel=v1").slot, sm90::kSlotFull);  // another kernel drops them
  EXPECT_EQ(sm90::apply_override(chosen, "kernel=v4,inverse=tf32").inverse, sm90::kInverseTf32);  // v4 takes tf32 when named
  EXPECT_EQ(sm90::apply_override(chosen, "kernel=v4").inverse, sm90::kInverseHier);
  EXPECT_EQ(sm90::apply_override(sm90::apply_override(chosen, "inverse=tf32"), "kernel=v4").inverse, sm90::kInverseHier);
  EXPECT_TRUE(test::contains(chosen.describe(many, 132), "KiB smem, 4 per SM")) << chosen.describe(many, 132);
  {
    test::ScopedEnv env("GDNBENCH_SM90_PLAN", "slot=packed,inverse=hier");
    const Plan p = sm90::plan_for(many, 132);
    EXPECT_EQ(p.slot, sm90::kSlotPacked);
    EXPECT_EQ(p.inverse, sm90::kInverseHier);
    EXPECT_EQ(p.block_v, chosen.block_v);
    EXPECT_EQ(p.prep_group, chosen.prep_group);
  }
}

// Few long sequences over many value heads split at block_v 128 (two state warpgroups), the
// transition pass at 64. H200 (docs/notes/prefill-sm90.md, "The split re-measured"), ms: 16/32
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
    EXPECT_NEAR(sm90::modeled_scan_us(b, sm90::choose(b, 132, sm90::kKernelV3), 132), 921, 0.03 * 921);
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
// that segments x value heads fill a wave: 8/24 1x32768 took 4 segments of 128 chunks (96 CTAs at
// block_v 128 on 132 SMs) and now takes 5 of 104 (120 CTAs). H100, thirteenth session, same binary
// by override: 751 -> 668 us; 8/24 24576+8192 778 -> 655 (segments of 96); 1x16384 406 -> 377 (48).
TEST(Sm90Plan, SegmentCountsFillAWave) {
  const Plan p = default_plan({32768}, 8, 24);
  EXPECT_EQ(p.seg_chunks, 104);
  EXPECT_EQ(p.block_v, 128);
  EXPECT_EQ(p.cp_block_v, 64);
  EXPECT_EQ(sm90::segments_of(32768, p.seg_chunks) * 24 * p.v_blocks(128), 120);
  EXPECT_EQ(default_plan({24576, 8192}, 8, 24).seg_chunks, 96);
  // The model places the scan's CTAs in grid order, as the GPU starts them: 8192+24576 at 96 chunks
  // would put the first sequence's 32-chunk segment in the first wave and a 96-chunk one in the
  // second (128 chunk-times, not 96), so it takes 48 (H100, thirteenth session, by override: 764
  // us at 96, 703 at 48).
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

TEST(Sm90Plan, RegisteredForSm90aWithItsPlanLine) {
  const Variant* v = Registry::instance().find("prefill/sm90");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->op, OpKind::prefill);
  EXPECT_EQ(v->backend, Backend::cuda);
  EXPECT_EQ(v->min_arch, 90);
  EXPECT_EQ(v->max_arch, 90);
  ASSERT_TRUE(bool(v->plan));
  const Shape s = prefill({32768}, 16, 32);
  EXPECT_EQ(v->supports(s), "");
  const std::string line = v->plan(s);
  EXPECT_TRUE(test::contains(line, "chunk 64")) << line;
  EXPECT_TRUE(test::contains(line, "block_v")) << line;
  EXPECT_TRUE(test::contains(line, "CTAs on")) << line;
  const std::string v1 = sm90::choose(Batch::of(s), 132, sm90::kKernelV1).describe(Batch::of(s), 132);
  EXPECT_EQ(v1.find("block_v 32 (4 warps, 2 own the state), 128 CTAs on 132 SMs"), std::string("chunk 64, ").size()) << v1;
  EXPECT_TRUE(test::contains(v1, "kernel v1")) << v1;
  const std::string v2 = sm90::choose(Batch::of(s), 132, sm90::kKernelV2).describe(Batch::of(s), 132);
  EXPECT_EQ(v2.find("block_v 32 (6 warps, 2 own the state, 4 prepare the next chunk), 128 CTAs on 132 SMs"),
            std::string("chunk 64, ").size())
      << v2;
  EXPECT_TRUE(test::contains(v2, "kernel v2")) << v2;
  const std::string v3 = sm90::choose(Batch::of(s), 132, sm90::kKernelV3).describe(Batch::of(s), 132);
  EXPECT_EQ(v3.find("block_v 32 (6 warps, 2 own the state, 4 load), 128 CTAs on 132 SMs"), std::string("chunk 64, ").size())
      << v3;
  // 32768 tokens in one sequence: 513 slots x 32 value heads of 18448 bytes, prepared per q/k head (GVA 2).
  EXPECT_TRUE(test::contains(v3, "kernel v3: every chunk prepared first (513 x 16 CTAs of 128 threads, one per q/k head")) << v3;
  EXPECT_TRUE(test::contains(v3, "288.8 MiB workspace")) << v3;
  EXPECT_TRUE(test::contains(v3, "mma.sync, f16 operands")) << v3;
  EXPECT_TRUE(test::contains(v3, "the inverse by 8 x 8 eliminations and f16 merges")) << v3;
  EXPECT_TRUE(test::contains(v3, "of full slots")) << v3;
  const std::string wg = sm90::apply_override(sm90::choose(Batch::of(s), 132, sm90::kKernelV3), "block_v=64,mma=wgmma")
                             .describe(Batch::of(s), 132);
  EXPECT_TRUE(test::contains(wg, "wgmma (the state warps one warpgroup), f16 operands")) << wg;
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
  EXPECT_EQ(sm90::slot_bytes(false), 2 * 8192 + sm90::kScalarBytes);
  EXPECT_EQ(sm90::slot_bytes(true), 10112);  // 625 pieces of 16 bytes, 128-byte aligned
  EXPECT_EQ(sm90::slot_bytes(sm90::kSlotLean), 10368);  // A_g and the vectors (10256 bytes), 128-byte aligned
  for (const int form : {sm90::kSlotFull, sm90::kSlotPacked, sm90::kSlotLean})
    EXPECT_EQ(sm90::workspace_bytes(32768, 1, 32, form), int64_t(513) * 32 * sm90::slot_bytes(form));
  // G: gam at the last token (full, lean), beside e^G in the last piece (packed).
  EXPECT_EQ(sm90::slot_g_offset(false), sm90::kSlotScalars + (sm90::kGam * 64 + 63) * 4);
  EXPECT_EQ(sm90::slot_g_offset(true), 16 * sm90::kSlotGPiece + 4);
  EXPECT_EQ(sm90::slot_g_offset(sm90::kSlotLean), 8192 + (sm90::kGam * 64 + 63) * 4);
}

// A packed slot's pieces (workspace.h) land on every piece on or left of the diagonal of both tiles
// once, on none right of it (those are zeros the scan keeps), on the scan's three vectors and on
// e^G, G.
TEST(Sm90Workspace, PackedSlotPiecesCoverTheLowerTrianglesAndTheScanVectors) {
  std::vector<int> hits(2 * 512, 0);
  std::vector<int> scalar_offsets;
  for (int e = 0; e < sm90::kPackedSlotPieces; ++e) {
    const sm90::SlotPiece at = sm90::slot_piece(e);
    ASSERT_GE(at.offset, 0) << e;
    ASSERT_EQ(at.offset % 16, 0) << e;
    if (at.part == 2) {
      scalar_offsets.push_back(at.offset);
      continue;
    }
    ASSERT_LT(at.offset, sm90::kHalfTileBytes) << e;
    const int row = at.offset / 128, physical = (at.offset % 128) / 16, piece = (physical ^ row) & 7;
    EXPECT_LE(piece, row / 8) << "piece " << e << " is right of the diagonal";
    // swizzle128 places element (row, 8 piece) at the same offset.
    EXPECT_EQ(unsigned(at.offset), sm90::swizzle128(row, 8 * piece)) << e;
    ++hits[at.part * 512 + row * 8 + piece];
  }
  for (int part = 0; part < 2; ++part)
    for (int row = 0; row < 64; ++row)
      for (int piece = 0; piece < 8; ++piece)
        EXPECT_EQ(hits[part * 512 + row * 8 + piece], piece <= row / 8 ? 1 : 0) << part << " " << row << " " << piece;
  ASSERT_EQ(scalar_offsets.size(), size_t(3 * 16 + 1));
  for (int i = 0; i < 48; ++i) EXPECT_EQ(scalar_offsets[size_t(i)], int(sm90::kEk) * 256 + 16 * i);
  EXPECT_EQ(scalar_offsets.back(), sm90::kNumScalars * 256);  // e^G, then G
  EXPECT_EQ(sm90::slot_piece(sm90::kSlotGPiece).offset, sm90::kNumScalars * 256);
  EXPECT_LE(16 * sm90::kPackedSlotPieces, sm90::kPackedSlotBytes);
}

// Full and lean slots carry their parts whole and in order, packed ones as above; slot_buffer_offset
// (where the scan's load warps copy a piece, its parts contiguous) says so for every piece.
TEST(Sm90Workspace, SlotPiecesLandWhereTheirPartsAre) {
  EXPECT_EQ(sm90::slot_pieces(sm90::kSlotFull), sm90::kFullSlotBytes / 16);
  EXPECT_EQ(sm90::slot_pieces(sm90::kSlotLean), (8192 + sm90::kScalarBytes) / 16);
  EXPECT_EQ(sm90::slot_pieces(sm90::kSlotPacked), sm90::kPackedSlotPieces);
  for (int e = 0; e < sm90::slot_pieces(sm90::kSlotFull); ++e)
    EXPECT_EQ(sm90::slot_buffer_offset(sm90::kSlotFull, e), 16 * e) << e;  // the buffer byte for byte
  for (int e = 0; e < sm90::slot_pieces(sm90::kSlotLean); ++e)  // A_g, then the scalars after P_g's tile
    EXPECT_EQ(sm90::slot_buffer_offset(sm90::kSlotLean, e), e < 512 ? 16 * e : 2 * sm90::kHalfTileBytes + 16 * (e - 512)) << e;
  for (int e = 0; e < sm90::kPackedSlotPieces; ++e) {
    const sm90::SlotPiece at = sm90::slot_piece(e);
    EXPECT_EQ(sm90::slot_buffer_offset(sm90::kSlotPacked, e), at.part * sm90::kHalfTileBytes + at.offset) << e;
  }
}

}  // namespace
}  // namespace gdn

// The host half of prefill/sm80 without a GPU: the shapes it declines and why, the devices whose
// shared memory cannot hold its scan, its plan (prefill/sm90's preparation rule) and plan specs, and
// its split (prefill/sm90's, at block_v 32), and its kernels as ptxas compiled them for sm_80 (resource-usage/prefill_sm80.txt): every planned
// kernel present, none spilling.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/registry.h"
#include "cpu/ptxas_report.h"
#include "prefill/sm80/plan.h"
#include "prefill/sm90/plan.h"
#include "prefill/sm90/segments.h"
#include "prefill/sm90/smem_layout.h"
#include "test_support.h"

namespace gdn {
namespace {

using test::prefill;

TEST(Sm80Plan, DeclinesWhatItDoesNotRunAndSaysWhy) {
  EXPECT_EQ(sm80::unsupported_reason(prefill({4096, 1, 0}, 16, 48)), "");
  Shape pool = prefill({100, 37}, 2, 4);
  pool.pool = 8, pool.state_dtype = DType::bf16;
  EXPECT_EQ(sm80::unsupported_reason(pool), "");
  Shape small = prefill({100}, 2, 4);
  small.dk = small.dv = 64;
  EXPECT_NE(sm80::unsupported_reason(small).find("K = V = 128"), std::string::npos);
  Shape fp8 = pool;
  fp8.state_dtype = DType::fp8e4m3;
  EXPECT_NE(sm80::unsupported_reason(fp8).find("prefill/sm90 only"), std::string::npos);
  Shape ckpt = pool;
  ckpt.checkpoint_every = 1024;
  EXPECT_NE(sm80::unsupported_reason(ckpt).find("checkpoints"), std::string::npos);
}

// Two stages at block_v 32 fit an sm_80 CTA (166,912 bytes) but not the 101,376 of sm_86, sm_89
// and sm_120, which take one q tile (98,304 and the static block) and the fixup of 128 threads
// (96,256) for a split; three fit sm_90
// and sm_100 (232,448), which take them. A device under the one-q-tile layout is declined with the
// numbers.
TEST(Sm80Plan, StagesFollowTheDevicesSharedMemory) {
  const sm90::Batch b = sm90::Batch::of(prefill({4096, 17}, 4, 16));
  EXPECT_EQ(sm80::scan_smem_bytes(32, 2), sm90::SmemLayout(32, sm90::kScan2Kernel).bytes);
  EXPECT_EQ(sm80::scan_smem_bytes(32, 3), sm90::SmemLayout(32, sm90::kScanKernel).bytes);
  EXPECT_EQ(sm80::scan_smem_bytes(64, 2), sm90::SmemLayout(64, sm90::kScan2Kernel).bytes);
  EXPECT_LE(sm80::scan_smem_bytes(64, 2) + sm80::kScanStaticSmem, 166912) << "two stages at block_v 64 fit an sm_80 CTA";
  EXPECT_EQ(sm90::SmemLayout(32, sm90::kScan2Kernel).stages, 2);
  EXPECT_EQ(sm80::choose(b, 108, 166912).stages, 2) << "three would not fit an sm_80 CTA";
  EXPECT_EQ(sm80::choose(b, 108, 0).stages, 2) << "no device: planned as sm_80";
  EXPECT_EQ(sm80::choose(b, 132, 232448).stages, 3);
  EXPECT_EQ(sm80::plan_for(b, 132, 232448, "stages=2").stages, 2);
  EXPECT_EQ(sm80::unrunnable_reason(sm80::choose(b, 108, 166912), 166912), "");
  EXPECT_EQ(sm80::unrunnable_reason(sm80::choose(b, 132, 232448), 232448), "");
  const std::string forced = sm80::unrunnable_reason(sm80::plan_for(b, 108, 166912, "stages=3"), 166912);
  EXPECT_NE(forced.find("3 stages"), std::string::npos) << forced;
  const sm80::Plan small = sm80::choose(b, 128, 101376);
  EXPECT_TRUE(small.single_q);
  EXPECT_EQ(small.stages, 2);
  EXPECT_EQ(small.block_v, 32);
  EXPECT_EQ(sm80::scan_smem_bytes(32, 2, true), sm90::SmemLayout(32, sm90::kScanQ1Kernel).bytes);
  EXPECT_EQ(sm80::unrunnable_reason(small, 101376), "");
  const sm80::Plan long_small = sm80::choose(sm90::Batch::of(prefill({32768}, 2, 8)), 128, 101376);
  EXPECT_GT(long_small.seg_chunks, 0) << "splits with the small fixup";
  EXPECT_EQ(long_small.fixup_threads, 128);
  EXPECT_EQ(long_small.fixup_m_buffers, 1);
  EXPECT_EQ(long_small.block_v, 32);
  EXPECT_EQ(sm80::fixup_smem_bytes(1, 128), 96256);
  EXPECT_EQ(sm80::unrunnable_reason(long_small, 101376), "");
  EXPECT_NE(sm80::unrunnable_reason(sm80::plan_for(sm90::Batch::of(prefill({32768}, 2, 8)), 128, 101376, "fixup_threads=256"), 101376)
                .find("the fixup needs 112640 bytes"),
            std::string::npos);
  EXPECT_FALSE(sm80::choose(b, 108, 166912).single_q);
  const std::string why = sm80::unrunnable_reason(small, 65536);
  EXPECT_NE(why.find("65536"), std::string::npos) << why;
  EXPECT_NE(why.find(std::to_string(sm80::scan_smem_bytes(32, 2, true) + sm80::kScanStaticSmem)), std::string::npos) << why;
  EXPECT_NE(why.find("one q tile"), std::string::npos) << why;
}

// q_tile=single forces the one-q-tile layout (two stages at block_v 32) on any device, so a Hopper
// runs what sm_86, sm_89 and sm_120 run; a spec that contradicts it is refused.
TEST(Sm80Plan, OneQTileIsTwoStagesAtBlockV32) {
  const sm90::Batch b = sm90::Batch::of(prefill(std::vector<int64_t>(8, 4096), 16, 32));
  const sm80::Plan p = sm80::plan_for(b, 132, 232448, "q_tile=single");
  EXPECT_TRUE(p.single_q);
  EXPECT_EQ(p.stages, 2) << "the default three become two";
  EXPECT_EQ(p.block_v, 32) << "the default 64 becomes 32";
  EXPECT_NE(p.describe(b, 132).find("two stages, one q tile"), std::string::npos) << p.describe(b, 132);
  EXPECT_NE(sm80::check_spec("q_tile=single,stages=3").find("two stages at block_v 32"), std::string::npos);
  EXPECT_NE(sm80::check_spec("q_tile=single,block_v=64").find("two stages at block_v 32"), std::string::npos);
  EXPECT_EQ(sm80::check_spec("q_tile=single,stages=2,block_v=32"), "");
  EXPECT_NE(sm80::check_spec("q_tile=one").find("expected staged|single"), std::string::npos);
}

TEST(Sm80Plan, PreparesPerQkHeadWhereSm90Would) {
  for (const auto& [lens, h, hv] : std::vector<std::tuple<std::vector<int64_t>, int, int>>{
           {{32768}, 2, 8}, {{2048}, 2, 8}, {{4096, 4096, 4096, 4096}, 16, 64}, {{300}, 16, 16}}) {
    const sm90::Batch b = sm90::Batch::of(prefill(lens, h, hv));
    EXPECT_EQ(sm80::choose(b, 108, 0).prep_group, sm90::prep_group_wins(b, 108)) << h << "/" << hv;
  }
  EXPECT_FALSE(sm80::choose(sm90::Batch::of(prefill({300}, 16, 16)), 108, 0).prep_group) << "GVA 1";
  EXPECT_TRUE(sm80::choose(sm90::Batch::of(prefill({4096, 4096, 4096, 4096}, 16, 64)), 108, 0).prep_group);
}

TEST(Sm80Plan, SpecsSetThePreparationAndRefuseTheRest) {
  const sm90::Batch b = sm90::Batch::of(prefill({4096, 4096, 4096, 4096}, 16, 64));
  EXPECT_TRUE(sm80::plan_for(b, 108, 0, "").prep_group);
  EXPECT_FALSE(sm80::plan_for(b, 108, 0, "prep=head").prep_group);
  EXPECT_TRUE(sm80::plan_for(b, 108, 0, "prep=group").prep_group);
  EXPECT_EQ(sm80::check_spec("prep=group"), "");
  EXPECT_EQ(sm80::check_spec("stages=3"), "");
  EXPECT_NE(sm80::check_spec("stages=4").find("expected 2|3"), std::string::npos);
  EXPECT_NE(sm80::check_spec("schedule=fused").find("unknown knob 'schedule'"), std::string::npos) << sm80::check_spec("schedule=fused");
  EXPECT_NE(sm80::check_spec("prep=both").find("expected head|group"), std::string::npos);
  EXPECT_NE(sm80::check_spec("prep").find("prefill/sm80 plan 'prep'"), std::string::npos);
  EXPECT_EQ(sm80::plan_for(b, 108, 0, "cp=16").seg_chunks, 16);
  EXPECT_NE(sm80::check_spec("cp=0").find("1..65536"), std::string::npos) << sm80::check_spec("cp=0");
  EXPECT_NE(sm80::check_spec("cp=8x").find("1..65536"), std::string::npos);
  const std::string line = sm80::plan_for(b, 108, 0, "").describe(b, 108);
  EXPECT_NE(line.find("block_v 64 (8 warps, 4 own the state, 4 load; two stages), 512 CTAs on 108 SMs"), std::string::npos) << line;
  EXPECT_NE(line.find("one per q/k head"), std::string::npos) << line;
  EXPECT_NE(line.find("; no context parallelism"), std::string::npos) << line;
}

// The split is prefill/sm90's choice with the scans this family has (mma.sync at block_v 32 and,
// where the device allows its block, 64; the transition pass at 32): long sequences of few heads
// are cut (as sm90 cuts them), a batch that fills the GPU is not. The fixup keeps two M buffers
// where a block may have 180,224 bytes, else one (112,640, under sm_80's 166,912 and the two-stage
// scan's 115,712).
TEST(Sm80Plan, SplitsLongSequencesOfFewHeadsAsSm90DoesOnMmaSync) {
  for (const auto& [lens, h, hv] : std::vector<std::tuple<std::vector<int64_t>, int, int>>{
           {{32768}, 2, 8}, {{32768}, 16, 32}, {{2048}, 2, 8}, {{4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096}, 16, 32}}) {
    const sm90::Batch b = sm90::Batch::of(prefill(lens, h, hv));
    const sm80::Plan got = sm80::choose(b, 108, 0);
    sm90::Plan base;
    base.block_v = 4 * hv * int64_t(lens.size()) > 108 ? 64 : 32;  // unsplit: 64 past a wave at 32
    base.cp_block_v = 32;
    const sm90::Plan want = sm90::choose_context_parallel(b, base, 108, 64);
    EXPECT_EQ(want.cp_block_v, 32);
    EXPECT_EQ(got.seg_chunks, want.seg_chunks) << h << "/" << hv << " " << lens.size() << "x" << lens[0];
    if (want.seg_chunks > 0) EXPECT_EQ(got.block_v, want.block_v) << h << "/" << hv << " " << lens.size() << "x" << lens[0];
  }
  const sm90::Batch long_thin = sm90::Batch::of(prefill({32768}, 2, 8));
  const sm80::Plan split = sm80::choose(long_thin, 108, 0);
  EXPECT_GT(split.seg_chunks, 0) << "32 unsplit CTAs on 108 SMs";
  EXPECT_EQ(split.ctas(long_thin), (128 / split.block_v) * 8 * sm90::segment_count(32768, 1, split.seg_chunks));
  EXPECT_EQ(sm80::choose(sm90::Batch::of(prefill({4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096}, 16, 32)), 108, 0).seg_chunks, 0)
      << "1024 CTAs: four waves or more are never split";
  EXPECT_EQ(sm80::plan_for(long_thin, 108, 0, "cp=off").seg_chunks, 0);

  EXPECT_EQ(sm80::fixup_smem_bytes(2), 180224);
  EXPECT_EQ(sm80::fixup_smem_bytes(1), 112640);
  EXPECT_EQ(split.fixup_m_buffers, 1) << "sm_80: 166,912 bytes a block";
  EXPECT_EQ(sm80::choose(long_thin, 132, 232448).fixup_m_buffers, 2);
  EXPECT_EQ(sm80::unrunnable_reason(split, 166912), "");
  EXPECT_EQ(sm80::plan_for(long_thin, 108, 0, "fixup_m=2").fixup_m_buffers, 2);
  const std::string two = sm80::unrunnable_reason(sm80::plan_for(long_thin, 108, 0, "fixup_m=2"), 166912);
  EXPECT_NE(two.find("the fixup needs 180224 bytes"), std::string::npos) << two;
  EXPECT_NE(sm80::check_spec("fixup_m=3").find("expected 1|2"), std::string::npos);
  EXPECT_EQ(sm80::plan_for(long_thin, 132, 232448, "fixup_threads=128").fixup_m_buffers, 1) << "the small fixup keeps one M";
  EXPECT_NE(sm80::check_spec("fixup_threads=128,fixup_m=2").find("one M buffer"), std::string::npos);
  EXPECT_NE(sm80::check_spec("fixup_threads=64").find("expected 128|256"), std::string::npos);
  const std::string line = split.describe(long_thin, 108);
  EXPECT_NE(line.find("context parallel: segments of " + std::to_string(split.seg_chunks) + " chunks"), std::string::npos) << line;
  EXPECT_NE(line.find("a fixup with 1 M buffer and 256 threads (110.0 KiB smem)"), std::string::npos) << line;
}

// Unsplit, the scan takes block_v 64 (four state warps a CTA) where block_v 32's grid needs more
// than one wave of one CTA per SM. A split takes it where the model finds it faster (H200, 1x32768:
// 4/16 and 16/16 at block_v 64 in four segments take 0.76x and 0.78x the block_v 32 split's time;
// 8/24, 16/32 and 32/32 in two segments 0.96-0.98x the unsplit scan's, under the split's bar; at
// 1x4096 4/16 and 16/16 in segments of 16 0.88x the unsplit call, results/ab/h200/sm80-short-cp.json).
TEST(Sm80Plan, BlockV64WhereBlockV32NeedsMoreThanAWave) {
  auto plan = [](std::vector<int64_t> lens, int h, int hv) { return sm80::choose(sm90::Batch::of(prefill(lens, h, hv)), 132, 232448); };
  EXPECT_EQ(plan({2048}, 16, 32).block_v, 32) << "128 CTAs on 132 SMs";
  const sm80::Plan wide = plan({2048}, 16, 48);
  EXPECT_EQ(wide.block_v, 64) << "192 CTAs at block_v 32";
  EXPECT_EQ(wide.stages, 3);
  EXPECT_EQ(wide.ctas(sm90::Batch::of(prefill({2048}, 16, 48))), 96);
  const std::vector<int64_t> eight(8, 4096);
  EXPECT_EQ(plan(eight, 16, 32).block_v, 64);
  EXPECT_EQ(plan(eight, 16, 32).seg_chunks, 0);
  const sm80::Plan split = plan({32768}, 4, 16);
  EXPECT_EQ(split.seg_chunks, 128);
  EXPECT_EQ(split.block_v, 64);
  EXPECT_EQ(split.stages, 3);
  EXPECT_EQ(plan({32768}, 16, 16).block_v, 64);
  EXPECT_EQ(plan({32768}, 8, 24).seg_chunks, 0) << "two segments at block_v 64: 0.96x, under the bar";
  for (const int h : {4, 16}) {  // 4/16 and 16/16 1x4096: a split modelled 9.2 % faster, over the 8 % bar
    const sm80::Plan four_segments = plan({4096}, h, 16);
    EXPECT_EQ(four_segments.seg_chunks, 16) << h << "/16";
    EXPECT_EQ(four_segments.block_v, 64) << h << "/16";
  }
  EXPECT_EQ(plan({4096}, 8, 24).seg_chunks, 0) << "measured 1.26x split (block_v 64, segments of 16)";
  EXPECT_EQ(plan({2048}, 4, 16).seg_chunks, 0) << "measured 1.09x split";
  EXPECT_EQ(plan({32768}, 8, 24).block_v, 32) << "96 CTAs on 132 SMs";
  EXPECT_EQ(sm80::choose(sm90::Batch::of(prefill({32768}, 4, 16)), 128, 101376).block_v, 32) << "99 KiB: one q tile, block_v 32";
  const sm90::Batch long_b = sm90::Batch::of(prefill({32768}, 16, 64));
  sm90::Plan unsplit64;
  unsplit64.block_v = 64;
  EXPECT_NEAR(sm90::modeled_scan_us(long_b, unsplit64, 132, true), 512 * 2.15 + 5, 1e-6) << "block_v 64 on mma.sync";
  EXPECT_NEAR(sm90::modeled_scan_us(long_b, unsplit64, 132), 512 * 1.92 + 5, 1e-6) << "block_v 64 on wgmma";
  const sm80::Plan on_sm80 = sm80::choose(sm90::Batch::of(prefill(eight, 16, 32)), 108, 166912);
  EXPECT_EQ(on_sm80.block_v, 64);
  EXPECT_EQ(on_sm80.stages, 2) << "three stages at block_v 64 are 184,320 bytes";
  EXPECT_EQ(sm80::unrunnable_reason(on_sm80, 166912), "");
  const auto b = sm90::Batch::of(prefill(eight, 16, 32));
  EXPECT_EQ(sm80::plan_for(b, 132, 232448, "block_v=32").block_v, 32);
  EXPECT_NE(sm80::check_spec("block_v=128").find("expected 32|64"), std::string::npos);
  const std::string line = sm80::plan_for(b, 132, 232448, "").describe(b, 132);
  EXPECT_NE(line.find("block_v 64 (8 warps, 4 own the state, 4 load; three stages), 512 CTAs"), std::string::npos) << line;
}

TEST(Sm80Plan, TheVariantIsRegisteredForSm80AndNewer) {
  const Variant* v = Registry::instance().find("prefill/sm80");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->min_arch, 80);
  EXPECT_GE(v->max_arch, 120);
  ASSERT_EQ(v->knobs.size(), 7u);
  EXPECT_EQ(v->knobs[0].name, "prep");
  EXPECT_EQ(v->knobs[1].name, "stages");
  EXPECT_EQ(v->knobs[2].name, "block_v");
  EXPECT_EQ(v->knobs[3].name, "q_tile");
  EXPECT_EQ(v->knobs[4].name, "cp");
  EXPECT_EQ(v->knobs[5].name, "fixup_m");
  EXPECT_EQ(v->knobs[6].name, "fixup_threads");
  EXPECT_EQ(v->supports(prefill({4096, 17}, 4, 16)), "");
}

const std::string kReport = std::string(GDN_RESOURCE_USAGE_DIR) + "/prefill_sm80.txt";

// sm_80, sm_86, sm_89 and sm_120 SASS (and compute_80 PTX, which ptxas does not report).
TEST(Sm80Resources, EveryKernelIsBuiltForEachTargetWithoutSpills) {
  const std::string for_gpu = GDN_FOR_GPU;
  if (!for_gpu.empty() && for_gpu != "80") GTEST_SKIP() << "built for compute capability " << for_gpu << ": prefill_sm80 is PTX only, ptxas did not run";
  const auto uses = test::read_report(kReport);
  ASSERT_FALSE(uses.empty()) << "no kernels in " << kReport << " (prefill_sm80 is built with RESOURCE_USAGE)";
  std::set<std::string> kernels;
  std::map<std::string, int> per_arch;
  for (const auto& u : uses) {
    const std::string name = test::split_template(u.name).first;
    if (name != "prefill_sm80_scan_kernel" && name != "prefill_sm80_prep_kernel" && name != "prefill_sm80_fixup_kernel") continue;
    kernels.insert(name);
    ++per_arch[u.arch];
    ASSERT_GE(u.spill_stores, 0) << u.name << ": no spill line in the report";
    EXPECT_EQ(u.spill_stores + u.spill_loads, 0) << u.name << " spills " << u.spill_stores << " + " << u.spill_loads << " bytes";
    // Six warps of the scan (and eight of the fixup) at one CTA per SM, four preparation CTAs of 128
    // threads per SM.
    EXPECT_LE(u.registers, name == "prefill_sm80_prep_kernel" ? 128 : 255) << u.name;
  }
  for (const auto& [arch, count] : per_arch)
    EXPECT_EQ(count, 23) << arch << ": scan at block_v 32 and 64 and transition pass with two and three stages, both "
                                    "with one q tile, the preparation per value head and per q/k head, for bf16 and f16; "
                                    "the fixup with one and two M buffers, and of 128 threads";
  // The family's own targets, unless the build named one for every family (scripts/sanitize.sh)
  // or one GPU (GDNBENCH_FOR_GPU=80: sm_80 alone).
  std::set<std::string> archs;
  for (const auto& [arch, count] : per_arch) archs.insert(arch);
  if (std::string(GDN_CUDA_ARCHS_OVERRIDE).empty() && for_gpu.empty())
    EXPECT_EQ(archs, (std::set<std::string>{"sm_120", "sm_80", "sm_86", "sm_89"}));
  EXPECT_EQ(kernels.size(), 3u);
}

}  // namespace
}  // namespace gdn

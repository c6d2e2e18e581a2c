// prefill/sm75_legacy's host-side choices (kernels/prefill/sm75_legacy/config.h): which problems it
// takes, how it pads K, how many value columns each warp owns and which staging tile it uses,
// plus the variant's registration and supports() as the runner sees them. No GPU needed.
#include <gtest/gtest.h>

#include "prefill/sm75_legacy/config.h"
#include "core/registry.h"
#include "core/shape.h"

namespace gdn {
namespace {

using legacy::choose_config;
using legacy::unsupported_reason;

constexpr int kH200Sms = 132;
constexpr int kH200Smem = 228 * 1024;
constexpr int kTuringSmem = 64 * 1024;

TEST(LegacyConfig, PadsKToThePowerOfTwoRowChunks) {
  EXPECT_EQ(legacy::padded_k(4), 32);
  EXPECT_EQ(legacy::padded_k(32), 32);
  EXPECT_EQ(legacy::padded_k(36), 64);
  EXPECT_EQ(legacy::padded_k(64), 64);
  EXPECT_EQ(legacy::padded_k(72), 128);
  EXPECT_EQ(legacy::padded_k(128), 128);
}

TEST(LegacyConfig, AcceptsEveryMultipleOfFourUpTo128) {
  for (int K = 4; K <= 128; K += 4) EXPECT_EQ(unsupported_reason(K, 128, 1, 32), "") << "K=" << K;
  for (int V : {1, 40, 80, 128, 256, 1000}) EXPECT_EQ(unsupported_reason(128, V, 3, 8), "") << "V=" << V;
}

TEST(LegacyConfig, RejectsWithAReason) {
  for (int K : {0, 2, 6, 130, 256}) {
    const std::string why = unsupported_reason(K, 128, 1, 32);
    EXPECT_NE(why.find("K must be"), std::string::npos) << "K=" << K << ": " << why;
    EXPECT_NE(why.find(std::to_string(K)), std::string::npos) << why;
  }
  EXPECT_NE(unsupported_reason(128, 0, 1, 32).find("V must be"), std::string::npos);
  EXPECT_NE(unsupported_reason(128, 128, 1, 70000).find("h_v"), std::string::npos);
  EXPECT_NE(unsupported_reason(128, 128, int64_t(1) << 30, 8).find("too many sequences"), std::string::npos);
}

// The measured H200 choices (kernels/prefill/sm75_legacy/README.md): 1 column per group for 8/16 and 2/8
// heads on one sequence, 2 for 16/32 on one or two sequences, 4 from four sequences on.
TEST(LegacyConfig, ColumnsPerGroupFollowTheMeasuredSweep) {
  auto cols = [](int64_t seqs, int hv) { return choose_config(128, 128, seqs, hv, kH200Sms, kH200Smem).cols_per_group; };
  EXPECT_EQ(cols(1, 8), 1);
  EXPECT_EQ(cols(1, 16), 1);
  EXPECT_EQ(cols(1, 32), 2);
  EXPECT_EQ(cols(2, 32), 2);
  EXPECT_EQ(cols(4, 32), 4);
  EXPECT_EQ(cols(8, 32), 4);
  EXPECT_EQ(cols(64, 64), 4);
}

TEST(LegacyConfig, ColumnsNeverStarveASmallerGpu) {
  // A 68-SM Turing card reaches the wider geometries with fewer columns; an unknown SM count
  // (0) is treated as one SM rather than dividing by zero.
  EXPECT_EQ(choose_config(128, 128, 1, 32, 68, kTuringSmem).cols_per_group, 2);
  EXPECT_EQ(choose_config(128, 128, 2, 32, 68, kTuringSmem).cols_per_group, 4);
  EXPECT_EQ(choose_config(128, 128, 1, 1, 0).cols_per_group, 4);
  for (int sms : {1, 24, 68, 132, 170})
    for (int64_t seqs : {1, 3, 16})
      for (int hv : {1, 8, 32, 64}) {
        const auto c = choose_config(128, 128, seqs, hv, sms);
        EXPECT_TRUE(c.cols_per_group == 1 || c.cols_per_group == 2 || c.cols_per_group == 4);
        EXPECT_EQ(c.warps, legacy::kBlockWarps);
        EXPECT_EQ(c.block_cols(), c.warps * legacy::kGroupsPerWarp * c.cols_per_group);
      }
}

TEST(LegacyConfig, TileSizeFollowsSharedMemoryPerSm) {
  EXPECT_EQ(choose_config(128, 128, 1, 32, kH200Sms, kH200Smem).tile_tokens, legacy::kTileTokensLarge);
  EXPECT_EQ(choose_config(128, 128, 1, 32, 68, kTuringSmem).tile_tokens, legacy::kTileTokensSmall);
  EXPECT_EQ(choose_config(128, 128, 1, 32, 84, 100 * 1024).tile_tokens, legacy::kTileTokensLarge);
  EXPECT_EQ(choose_config(128, 128, 1, 32, 84).tile_tokens, legacy::kTileTokensLarge);  // unknown
  EXPECT_EQ(choose_config(48, 80, 2, 3, 84).padded_k, 64);
}

Shape prefill_shape(int dk, int dv, DType dtype) {
  Shape s;
  s.op = OpKind::prefill;
  s.seqlens = {5, 33};
  s.h_qk = 2, s.h_v = 4, s.dk = dk, s.dv = dv;
  s.input_dtype = dtype;
  s.layout = Layout::kv;
  return s;
}

TEST(LegacyVariant, IsRegisteredForTuringOn) {
  const Variant* v = Registry::instance().find("prefill/sm75_legacy");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->op, OpKind::prefill);
  EXPECT_EQ(v->backend, Backend::cuda);
  EXPECT_EQ(v->min_arch, 75);
  EXPECT_FALSE(v->test_only);
  bool tightened_ht = false;
  for (const auto& t : v->tolerances) tightened_ht |= t.tensor == "ht" && t.rel_l2 <= 1e-4;
  EXPECT_TRUE(tightened_ht);
}

TEST(LegacyVariant, SupportsBothInputTypesAndRejectsOthers) {
  const Variant* v = Registry::instance().find("prefill/sm75_legacy");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->supports(prefill_shape(128, 128, DType::bf16)), "");
  EXPECT_EQ(v->supports(prefill_shape(128, 128, DType::f16)), "");
  EXPECT_EQ(v->supports(prefill_shape(64, 64, DType::f16)), "");
  EXPECT_EQ(v->supports(prefill_shape(48, 80, DType::bf16)), "");
  EXPECT_NE(v->supports(prefill_shape(128, 128, DType::f32)), "");
  EXPECT_NE(v->supports(prefill_shape(256, 256, DType::bf16)), "");
  Shape raw = prefill_shape(128, 128, DType::bf16);
  raw.gate = GateForm::raw;
  raw.layout = Layout::vk;
  raw.has_h0 = false;
  EXPECT_EQ(v->supports(raw), "");
}

}  // namespace
}  // namespace gdn

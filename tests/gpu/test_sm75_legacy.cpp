// prefill/sm75_legacy against the fp64 reference on the shapes that exercise its own machinery
// (test_variants.cpp covers the common prefill cases): sequences spanning several 32-token
// staging tiles with ragged tails, tiles that switch between the scaled-state path and the
// per-token decay path inside one sequence, every columns-per-warp geometry the launch can pick,
// padded K, masked value columns, f16 inputs. Skips without a CUDA device.
#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "test_support.h"
#include "core/op.h"
#include "core/registry.h"
#include "run/backend.h"
#include "run/runner.h"
#include "gpu_suite.h"

namespace gdn {
namespace {

constexpr uint64_t kSeed = 20260101;

Shape prefill(std::vector<int64_t> lens, int h_qk, int h_v, int dk, int dv, Layout layout) {
  Shape s;
  s.op = OpKind::prefill;
  s.seqlens = std::move(lens);
  s.h_qk = h_qk, s.h_v = h_v, s.dk = dk, s.dv = dv;
  s.layout = layout;
  return s;
}

struct Case {
  std::string label;
  Shape shape;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.label << " (" << c.shape.key() << ")"; }

std::vector<Case> cases() {
  std::vector<Case> c;
  // Tiles: 97 = 3 full tiles + 1, 64 = exactly 2, 31 = one partial tile, 1 = a single token.
  c.push_back({"tiles_ragged_kv", prefill({97, 64, 31, 1}, 2, 4, 128, 128, Layout::kv)});
  Shape vk = prefill({97, 64, 31, 1}, 1, 4, 128, 128, Layout::vk);
  vk.has_h0 = false;
  c.push_back({"tiles_ragged_vk_no_h0", vk});
  // Strong decay sends most heads' tiles down the per-token path, head 0 (no decay) stays fast.
  Shape strong = prefill({150, 40}, 2, 4, 128, 128, Layout::kv);
  strong.inputs = InputDist::strong_decay;
  c.push_back({"strong_decay_both_paths", strong});
  // 16/32 heads on 1, 2 and 4 sequences: the launch picks 1, 2 or 4 columns per group on
  // current GPUs (short sequences keep the fp64 reference quick).
  c.push_back({"geometry_h16_32_one_seq", prefill({40}, 16, 32, 128, 128, Layout::kv)});
  c.push_back({"geometry_h16_32_four_seqs", prefill({40, 3, 33, 20}, 16, 32, 128, 128, Layout::vk)});
  c.push_back({"geometry_h2_8", prefill({70}, 2, 8, 128, 128, Layout::kv)});
  Shape f16 = prefill({65, 7}, 2, 4, 64, 64, Layout::vk);
  f16.input_dtype = DType::f16;
  c.push_back({"f16_k64_v64", f16});
  Shape f16raw = prefill({45}, 1, 2, 128, 128, Layout::kv);
  f16raw.input_dtype = DType::f16;
  f16raw.gate = GateForm::raw;
  c.push_back({"f16_raw_gate", f16raw});
  c.push_back({"k36_v20_masked_columns", prefill({50, 9}, 1, 3, 36, 20, Layout::kv)});
  return c;
}

class LegacyPrefill : public test::CudaSuite<Case> {};

TEST_P(LegacyPrefill, MatchesReference) {
  const Variant* v = Registry::instance().find("prefill/sm75_legacy");
  ASSERT_NE(v, nullptr);
  const Shape& s = GetParam().shape;
  ASSERT_EQ(op_def(s.op).validate(s), "") << s.key();
  ASSERT_EQ(v->supports(s), "") << s.key();
  if (!backend_) GTEST_SKIP() << "CUDA backend unavailable: " << why_no_device_;
  if (auto why = backend_->can_run(*v); !why.empty()) GTEST_SKIP() << "cannot run here: " << why;

  const Verification r = verify_variant(*v, s, *backend_, kSeed);
  ASSERT_TRUE(r.ran);
  ASSERT_FALSE(r.checks.empty());
  for (const auto& c : r.checks) {
    EXPECT_EQ(c.unwritten, 0) << c.tensor << " on " << s.key();
    EXPECT_EQ(c.nonfinite, 0) << c.tensor << " on " << s.key();
    EXPECT_TRUE(c.pass) << c.tensor << " rel_l2 " << c.rel_l2 << " (tol " << c.tolerance << ") on " << s.key();
  }
  EXPECT_TRUE(r.pass);
}

INSTANTIATE_TEST_SUITE_P(Shapes, LegacyPrefill, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& i) { return i.param.label; });

}  // namespace
}  // namespace gdn

// Prefill state checkpoints (docs/method.md 2.4): the contract (validation, the shape key, the
// config axis), the generated tables, the reference's intermediate states, prefill/cpu through
// the real verifier (every written checkpoint compared, every other slot bit-identical), a wrong
// variant and a tampered pool that verification must reject, and a prompt split at a checkpoint
// that continues to the unsplit prompt's outputs and final state.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "checkpoint_continuation.h"
#include "config/adhoc_axes.h"
#include "config/config.h"
#include "config/repro.h"
#include "core/axes.h"
#include "core/checkpoints.h"
#include "core/errors.h"
#include "core/op.h"
#include "core/registry.h"
#include "core/slot.h"
#include "reference/reference.h"
#include "run/backend.h"
#include "run/inputs.h"
#include "run/problem.h"
#include "run/runner.h"
#include "run/verify.h"
#include "test_support.h"

namespace gdn {
namespace {

// A pool-form prefill with room for its checkpoints: small heads so the reference is quick.
Shape pooled(std::vector<int64_t> seqlens, int64_t every, int K = 32, int V = 48) {
  Shape s = op_def(OpKind::prefill).default_shape();
  s.seqlens = std::move(seqlens);
  s.h_qk = 1, s.h_v = 2, s.dk = K, s.dv = V;
  s.checkpoint_every = every;
  int64_t needed = int64_t(s.seqlens.size());
  for (auto l : s.seqlens) needed += every > 0 ? l / every : 0;
  s.pool = needed + 5;  // a few slots no one names: they must stay bit-identical
  return s;
}

Shape with_positions(Shape s, std::vector<std::vector<int64_t>> at) {
  s.checkpoint_every = 0;
  s.checkpoint_at = std::move(at);
  int64_t needed = int64_t(s.seqlens.size());
  for (const auto& g : s.checkpoint_at) needed += int64_t(g.size());
  s.pool = needed + 3;
  return s;
}

const Variant& variant(const char* name) {
  const Variant* v = Registry::instance().find(name);
  if (!v) throw std::logic_error(std::string(name) + " is not registered");
  return *v;
}

Verification verify_cpu(const char* name, const Shape& s, uint64_t seed = 5) {
  EXPECT_EQ(op_def(s.op).validate(s), "") << s.key();
  auto backend = make_cpu_backend(2);
  return verify_variant(variant(name), s, *backend, seed);
}

const TensorCheck* check_of(const Verification& v, const std::string& tensor) {
  for (const auto& c : v.checks)
    if (c.tensor == tensor) return &c;
  return nullptr;
}

// Passes, and the checkpoints were compared (not skipped).
void expect_verified(const Shape& s) {
  SCOPED_TRACE(s.key());
  const Verification v = verify_cpu("prefill/cpu", s);
  EXPECT_TRUE(v.pass);
  for (const auto& c : v.checks)
    EXPECT_TRUE(c.pass) << c.tensor << " rel " << c.rel_l2 << " tol " << c.tolerance << " unwritten " << c.unwritten
                        << " untouched_diff " << c.untouched_diff << " nonfinite " << c.nonfinite;
  const TensorCheck* ck = check_of(v, "checkpoints");
  ASSERT_NE(ck, nullptr) << "no checkpoint check";
  EXPECT_GT(ck->checked, 0);
  EXPECT_LE(ck->rel_l2, 1e-4);  // fp32 all the way on the host (bf16 pools are checked below)
  const TensorCheck* pool = check_of(v, "pool");
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->untouched_diff, 0);
}

// ---- contract ------------------------------------------------------------------------------

TEST(PrefillCheckpoints, PositionsCountFromEachSequenceAndIncludeItsEnd) {
  Shape s = pooled({0, 1, 63, 64, 200, 1024}, 64);
  EXPECT_EQ(checkpoint_positions(s, 0), std::vector<int64_t>{});
  EXPECT_EQ(checkpoint_positions(s, 2), std::vector<int64_t>{});
  EXPECT_EQ(checkpoint_positions(s, 3), std::vector<int64_t>{64});  // the final position is a checkpoint
  EXPECT_EQ(checkpoint_positions(s, 4), (std::vector<int64_t>{64, 128, 192}));
  EXPECT_EQ(checkpoint_columns(s), 16);
  s.checkpoint_every = 0;
  s.checkpoint_at = {{}, {}, {}, {64}, {128}, {64, 1024}};
  EXPECT_EQ(checkpoint_positions(s, 5), (std::vector<int64_t>{64, 1024}));
  EXPECT_EQ(checkpoint_columns(s), 2);
}

TEST(PrefillCheckpoints, ValidationNamesWhatIsWrong) {
  const auto why = [](const Shape& s) { return op_def(OpKind::prefill).validate(s); };
  Shape s = pooled({256, 100}, 128);
  EXPECT_EQ(why(s), "");
  s.checkpoint_every = 100;
  EXPECT_NE(why(s).find("multiple of 64 (got 100)"), std::string::npos) << why(s);
  s.checkpoint_every = 64;
  s.pool = 3;  // 2 sequences + 4 + 1 checkpoints need 7
  EXPECT_NE(why(s).find("too small"), std::string::npos) << why(s);
  Shape dense = s;
  dense.pool = 0;
  EXPECT_NE(why(dense).find("pool form"), std::string::npos) << why(dense);
  Shape at = with_positions(pooled({256, 100}, 0), {{64, 256}, {64}});
  EXPECT_EQ(why(at), "");
  for (const auto& bad : std::vector<std::vector<std::vector<int64_t>>>{
           {{64, 256}}, {{128, 64}, {}}, {{65}, {}}, {{}, {128}}, {{0}, {}}, {{256, 256}, {}}}) {
    Shape b = at;
    b.checkpoint_at = bad;
    EXPECT_NE(why(b), "") << checkpoint_at_text(bad);
  }
  at.checkpoint_every = 64;
  EXPECT_NE(why(at).find("not both"), std::string::npos);
}

TEST(PrefillCheckpoints, KeyJsonAndTextForms) {
  Shape s = pooled({100, 37}, 0);
  const std::string plain = s.key();
  EXPECT_EQ(plain.find("ckpt"), std::string::npos);  // keys without checkpoints are unchanged
  s.checkpoint_every = 1024;
  EXPECT_NE(s.key().find("idx=identity ckpt=1024 gate=log"), std::string::npos) << s.key();
  s.checkpoint_every = 0;
  s.checkpoint_at = {{64}, {}};
  EXPECT_NE(s.key().find(" ckpt=at:64/ "), std::string::npos) << s.key();
  EXPECT_EQ(shape_to_json(shape_from_json_object(shape_to_json(s))), shape_to_json(s));
  s.checkpoint_at = {std::vector<int64_t>(40, 64)};
  EXPECT_NE(s.key().find(" ckpt=at:40pos#"), std::string::npos) << s.key();

  EXPECT_EQ(parse_checkpoint_at("at:64+128//1024"), (std::vector<std::vector<int64_t>>{{64, 128}, {}, {1024}}));
  EXPECT_EQ(checkpoint_at_text({{64, 128}, {}, {1024}}), "at:64+128//1024");
  for (const char* bad : {"64", "at:", "at:/", "at:64+", "at:+64", "at:6x4", "at:64++128"})
    EXPECT_THROW(parse_checkpoint_at(bad), std::invalid_argument) << bad;
  EXPECT_EQ(spread_checkpoint_at({{64, 1024}}, {2000, 100, 64}),
            (std::vector<std::vector<int64_t>>{{64, 1024}, {64}, {64}}));
}

TEST(PrefillCheckpoints, ConfigAxisAndReproFlags) {
  const auto cfg = parse_config(
      "cases:\n  - op: prefill\n    seqlens: \"300+64\"\n    pool: 20\n    checkpoints: [0, 64, \"at:64+256\", "
      "\"at:128/64\"]\n",
      "ckpt.yaml");
  const auto& shapes = cfg.cases.at(0).shapes;
  ASSERT_EQ(shapes.size(), 4u);
  EXPECT_FALSE(shapes[0].has_checkpoints());
  EXPECT_EQ(shapes[1].checkpoint_every, 64);
  EXPECT_EQ(shapes[2].checkpoint_at, (std::vector<std::vector<int64_t>>{{64, 256}, {64}}));  // one list for all
  EXPECT_EQ(shapes[3].checkpoint_at, (std::vector<std::vector<int64_t>>{{128}, {64}}));
  for (const auto& s : shapes) {
    const auto axes = adhoc_axes_of(s);
    ASSERT_TRUE(axes);
    const SweepConfig one = adhoc_config("prefill", *axes, "*");
    EXPECT_EQ(shape_to_json(one.cases.at(0).shapes.at(0)), shape_to_json(s)) << s.key();
  }
  // A C that is not a multiple of 64 is bad input (exit 3) naming the key and the value.
  try {
    parse_config("cases:\n  - op: prefill\n    seqlens: 1x256\n    pool: 9\n    checkpoints: 100\n", "bad.yaml");
    ADD_FAILURE() << "checkpoints: 100 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitBadInput);
    EXPECT_NE(std::string(e.what()).find("bad.yaml:5: cases[0].checkpoints"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("100"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("multiple of 64"), std::string::npos) << e.what();
  }
  for (const char* bad : {"checkpoints: 64\n",                      // dense form
                          "pool: 9\n    checkpoints: \"at:100\"\n",  // not a multiple of 64
                          "pool: 9\n    checkpoints: \"at:64/64/64\"\n",  // three lists, one sequence
                          "pool: 2\n    checkpoints: 64\n"})        // no room for 4 checkpoints
    EXPECT_THROW(parse_config(std::string("cases:\n  - op: prefill\n    seqlens: 1x256\n    ") + bad, "bad.yaml"), Error)
        << bad;
}

TEST(PrefillCheckpoints, TablesNameDistinctFreeSlotsAndSkipWhereAsked) {
  for (const IndexPattern pattern : {IndexPattern::identity, IndexPattern::random, IndexPattern::padded, IndexPattern::high}) {
    Shape s = pooled({300, 0, 129, 1024, 64}, 64);
    s.indices = pattern;
    const auto slots = make_indices(s, 3);
    const auto table = make_checkpoint_indices(s, 3);
    const int64_t J = checkpoint_columns(s);
    ASSERT_EQ(int64_t(table.size()), 5 * J);
    std::set<int64_t> seen;
    for (auto slot : slots)
      if (slot >= 0) seen.insert(slot);
    int64_t named = 0, skipped = 0;
    for (int64_t n = 0; n < 5; ++n)
      for (int64_t j = 0; j < J; ++j) {
        const int64_t slot = table[size_t(n * J + j)];
        if (j >= int64_t(checkpoint_positions(s, n).size())) {
          EXPECT_EQ(slot, -1);
          continue;
        }
        if (slot < 0) {
          ++skipped;
          continue;
        }
        EXPECT_LT(slot, s.pool_slots());
        EXPECT_TRUE(seen.insert(slot).second) << "slot " << slot << " named twice";
        ++named;
      }
    EXPECT_EQ(named, checkpoints_written(s));
    EXPECT_EQ(skipped > 0, pattern == IndexPattern::padded);
    // `high` fills the pool from the top: every slot above the lowest one named is named.
    if (pattern == IndexPattern::high) EXPECT_EQ(*seen.begin(), s.pool_slots() - int64_t(seen.size()));
  }
}

TEST(PrefillCheckpoints, ByteModelCountsEachWrittenCheckpointAsAStateWrite) {
  Shape s = pooled({1024, 512}, 0);
  const double without = op_def(OpKind::prefill).work(s).bytes;
  s.checkpoint_every = 256;  // 4 + 2 checkpoints
  const double slot = double(s.h_v) * s.dk * s.dv * 4;
  EXPECT_DOUBLE_EQ(op_def(OpKind::prefill).work(s).bytes - without, 6 * slot + 2 * 4 * 8.0);
}

TEST(PrefillCheckpoints, GpuVariantsTakeThemOrSayWhyNot) {
  Shape s = pooled({1024}, 256, 128, 128);
  s.h_qk = 16, s.h_v = 32;
  // prefill/sm90 writes them on every schedule its plan may pick (tests/gpu/test_prefill_sm90_checkpoints.cpp).
  if (const Variant* v = Registry::instance().find("prefill/sm90")) {
    EXPECT_EQ(v->supports(s), "");
    for (const char* plan : {"schedule=fused", "cp=2,block_v=128", "cp=off,block_v=32"}) {
      Shape p = s;
      p.plan = plan;
      EXPECT_EQ(v->supports(p), "") << plan;
    }
  }
  for (const char* name : {"prefill/cuda_recurrent", "prefill/sm75_legacy"})
    if (const Variant* v = Registry::instance().find(name)) {
      EXPECT_NE(v->supports(s).find("checkpoints"), std::string::npos) << name << ": " << v->supports(s);
      Shape plain = s;
      plain.checkpoint_every = 0;
      EXPECT_EQ(v->supports(plain).find("checkpoints"), std::string::npos) << name;
    }
}

// ---- reference -----------------------------------------------------------------------------

TEST(PrefillCheckpoints, ChunkedReferenceSavesTheRecurrencesStates) {
  for (const Layout layout : {Layout::kv, Layout::vk}) {
    Shape s = with_positions(pooled({300, 0, 129, 64, 1}, 0), {{64, 192, 256}, {}, {128}, {64}, {}});
    s.layout = layout;
    s.inputs = InputDist::strong_decay;
    auto backend = make_cpu_backend(1);
    Problem p(s, *backend, 9);
    const auto rec = ref::prefill_recurrent(s, p.inputs(), {}, 2);
    const auto chk = ref::prefill_chunked(s, p.inputs(), 64, {}, 2);
    const auto odd = ref::prefill_chunked(s, p.inputs(), 48, {}, 2);  // chunks that straddle checkpoints
    ASSERT_EQ(rec.checkpoints.size(), size_t(5 * 3 * s.h_v * s.dk * s.dv));
    double d2 = 0, dodd = 0, r2 = 0;
    int64_t finite = 0;
    for (size_t i = 0; i < rec.checkpoints.size(); ++i) {
      if (std::isnan(rec.checkpoints[i])) continue;
      ++finite;
      d2 += std::pow(chk.checkpoints[i] - rec.checkpoints[i], 2), dodd += std::pow(odd.checkpoints[i] - rec.checkpoints[i], 2);
      r2 += rec.checkpoints[i] * rec.checkpoints[i];
    }
    EXPECT_EQ(finite, 5 * s.h_v * s.dk * s.dv);  // 3 + 1 + 1 checkpoints
    EXPECT_LT(std::sqrt(d2 / r2), 1e-10);
    EXPECT_LT(std::sqrt(dodd / r2), 1e-10);
    // The last checkpoint of the 64-token sequence is its final state.
    const int64_t KV = int64_t(s.dk) * s.dv, J = 3;
    for (int64_t e = 0; e < s.h_v * KV; ++e)
      ASSERT_EQ(rec.checkpoints[size_t((3 * J + 0) * s.h_v * KV + e)], rec.ht[size_t(3 * s.h_v * KV + e)]);
  }
}

// ---- prefill/cpu through the verifier ------------------------------------------------------

TEST(PrefillCheckpoints, CpuVerifiesEvery64And128And1024) {
  expect_verified(pooled({200, 64, 130}, 64));
  expect_verified(pooled({300, 128, 1, 0, 257}, 128));
  expect_verified(pooled({2100, 1024, 1023}, 1024, 16, 16));
}

TEST(PrefillCheckpoints, CpuVerifiesExplicitListsRaggedEmptyAndSingleTokenSequences) {
  expect_verified(with_positions(pooled({300, 0, 1, 129, 64, 5}, 0), {{64, 256}, {}, {}, {128}, {64}, {}}));
  expect_verified(with_positions(pooled({1000}, 0), {{320, 960}}));
}

TEST(PrefillCheckpoints, CpuVerifiesEveryPatternDtypeAndLayoutWithSkippedEntries) {
  for (const IndexPattern pattern : {IndexPattern::random, IndexPattern::padded, IndexPattern::high})
    for (const DType state : {DType::f32, DType::bf16})
      for (const Layout layout : {Layout::kv, Layout::vk}) {
        Shape s = pooled({129, 300, 64, 0, 200, 1, 70, 65, 256}, 64);
        s.indices = pattern, s.state_dtype = state, s.layout = layout;
        s.index_dtype = pattern == IndexPattern::random ? DType::i32 : DType::i64;
        SCOPED_TRACE(s.key());
        const Verification v = verify_cpu("prefill/cpu", s);
        EXPECT_TRUE(v.pass);
        const TensorCheck* ck = check_of(v, "checkpoints");
        ASSERT_NE(ck, nullptr);
        EXPECT_TRUE(ck->pass) << ck->rel_l2;
        EXPECT_EQ(check_of(v, "pool")->untouched_diff, 0);
      }
}

TEST(PrefillCheckpoints, AWrongCheckpointFailsVerification) {
  const Verification v = verify_cpu("prefill/cpu_late_checkpoint", pooled({300, 200}, 64));
  EXPECT_FALSE(v.pass);
  ASSERT_NE(check_of(v, "checkpoints"), nullptr);
  EXPECT_FALSE(check_of(v, "checkpoints")->pass);
  EXPECT_GT(check_of(v, "checkpoints")->rel_l2, 0.1);
  EXPECT_TRUE(check_of(v, "o")->pass);  // the bug is in the checkpoints alone
  EXPECT_TRUE(check_of(v, "pool")->pass);
}

TEST(PrefillCheckpoints, AWriteToAnUnnamedSlotFailsVerification) {
  const Shape s = pooled({300, 200}, 128);
  auto backend = make_cpu_backend(1);
  Problem p(s, *backend, 5);
  p.reset_device();
  variant("prefill/cpu").launch(s, p.device(), backend->launch_context());
  p.download();
  const auto tols = effective_tolerances(s, variant("prefill/cpu").tolerances);
  ASSERT_TRUE(check_outputs(p, tols, {}, 1).pass);
  // The last slot is named by no one: one changed element there is an untouched-slot failure.
  const Tensor& pool = p.results().at("pool");
  const int64_t last = pool.numel() - 1;
  static_cast<float*>(pool.data)[last] += 1.f;
  const Verification v = check_outputs(p, tols, {}, 1);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(check_of(v, "pool")->untouched_diff, 1);
}

// The command line: a wrong checkpoint is exit 2 (verification failed), a bad C exit 3 naming the
// flag and the value, as is a position off the 64 grid.
TEST(PrefillCheckpoints, CommandLineExitCodes) {
  const std::string bin = GDN_BINARY, flags = " --op prefill -a seqlens=300+200 -a pool=12 -a heads=1/2 -a head_dim=32";
  auto r = test::run_shell(bin + " verify" + flags + " -a checkpoints=64 --variant prefill/cpu 2>&1");
  EXPECT_EQ(r.code, 0) << r.out;
  r = test::run_shell(bin + " verify" + flags + " -a checkpoints=64 --variant prefill/cpu_late_checkpoint 2>&1");
  EXPECT_EQ(r.code, 2) << r.out;
  r = test::run_shell(bin + " verify" + flags + " -a checkpoints=100 --variant prefill/cpu 2>&1");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_TRUE(test::contains(r.out, "-a checkpoints=100")) << r.out;
  EXPECT_TRUE(test::contains(r.out, "multiple of 64")) << r.out;
  r = test::run_shell(bin + " verify" + flags + " -a checkpoints=at:64+32 --variant prefill/cpu 2>&1");
  EXPECT_EQ(r.code, 3) << r.out;
}

// ---- the reverse: continuing from a checkpoint slot ----------------------------------------

TEST(PrefillCheckpoints, APromptSplitAtACheckpointContinuesToTheUnsplitResult) {
  auto backend = make_cpu_backend(2);
  for (const DType state : {DType::f32, DType::bf16})
    for (const Layout layout : {Layout::kv, Layout::vk})
      for (const int64_t p : {64, 256}) {
        Shape s = pooled({300}, 0);
        s.pool = 4, s.state_dtype = state, s.layout = layout, s.indices = IndexPattern::random;
        s.gate = p == 64 ? GateForm::raw : GateForm::log;
        SCOPED_TRACE(s.key() + " split at " + std::to_string(p));
        const auto c = test::continue_from_checkpoint(variant("prefill/cpu"), *backend, s, p, 21);
        if (state == DType::f32) {
          // The host keeps fp32 states: a split at a checkpoint is exact.
          EXPECT_TRUE(c.o_identical) << c.o_rel;
          EXPECT_TRUE(c.state_identical) << c.state_rel;
        } else {
          // The bf16 checkpoint rounds the state once more than the unsplit run.
          EXPECT_LT(c.o_rel, 1e-2);
          EXPECT_LT(c.state_rel, 1e-2);
        }
      }
}

}  // namespace
}  // namespace gdn

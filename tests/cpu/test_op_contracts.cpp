// The op contracts: tensor lists and the docs/method.md 5 work models, against hand numbers.
#include <gtest/gtest.h>

#include "core/op.h"

namespace gdn {
namespace {

Shape decode_shape(int64_t B) {
  Shape s;
  s.op = OpKind::decode;
  s.batch = B;
  return s;  // 16/32 heads, K = V = 128, fp32 vk pool, log gate
}

TEST(WorkModel, DecodeMatchesSpecFormula) {
  // B(2HK + HV V)e + B HV V e + 8 B HV + 2 B HV K V 4, B = 256.
  const auto w = op_def(OpKind::decode).work(decode_shape(256));
  const double expect = 256.0 * (2 * 16 * 128 + 32 * 128) * 2 + 256.0 * 32 * 128 * 2 + 8.0 * 256 * 32 +
                        2.0 * 256 * 32 * 128 * 128 * 4;
  EXPECT_DOUBLE_EQ(w.bytes, expect);
  EXPECT_DOUBLE_EQ(w.flops, 6.0 * 256 * 32 * 128 * 128);
  EXPECT_TRUE(w.bandwidth_bound);
}

TEST(WorkModel, PaddingRowsMoveNoState) {
  auto s = decode_shape(256);
  const double full = op_def(OpKind::decode).work(s).bytes;
  s.indices = IndexPattern::padded;  // rows i % 8 == 7 are -1: 32 of 256
  s.pool = 1024;
  EXPECT_DOUBLE_EQ(full - op_def(OpKind::decode).work(s).bytes, 2.0 * 32 * 32 * 128 * 128 * 4);
}

TEST(WorkModel, MtpReadsOnceWritesOnceAndCachesEveryToken) {
  Shape s = decode_shape(128);
  s.op = OpKind::mtp;
  s.tokens = 4;
  const double slot = 32.0 * 128 * 128 * 4, io = 128.0 * 4 * ((2 * 16 * 128 + 32 * 128) * 2 + 32 * 128 * 2 + 8 * 32);
  EXPECT_DOUBLE_EQ(op_def(OpKind::mtp).work(s).bytes, io + 2 * 128 * slot);
  s.update_state = false;
  EXPECT_DOUBLE_EQ(op_def(OpKind::mtp).work(s).bytes, io + 128 * slot);
  s.cache_intermediate = true;
  EXPECT_DOUBLE_EQ(op_def(OpKind::mtp).work(s).bytes, io + 128 * slot + 128 * 4 * slot);
  s.rollback = true;  // the start state comes from the cache instead of the slot: + accepted[B]
  EXPECT_DOUBLE_EQ(op_def(OpKind::mtp).work(s).bytes, io + 128 * slot + 128 * 4 * slot + 128 * 4);
}

TEST(Tensors, RollbackAddsAcceptedAndMakesTheCacheAnInput) {
  Shape s = decode_shape(5);
  s.op = OpKind::mtp;
  s.tokens = 3;
  s.rollback = true;
  EXPECT_NE(op_def(OpKind::mtp).validate(s).find("needs cache_intermediate"), std::string::npos);
  s.cache_intermediate = true;
  EXPECT_EQ(op_def(OpKind::mtp).validate(s), "");
  bool accepted = false, inter = false;
  for (const auto& t : op_def(OpKind::mtp).tensors(s)) {
    if (t.name == "accepted") {
      accepted = true;
      EXPECT_EQ(t.dtype, DType::i32);
      EXPECT_EQ(t.dims, std::vector<int64_t>{5});
      EXPECT_EQ(t.role, Role::input);
    }
    if (t.name == "intermediate") {
      inter = true;
      EXPECT_EQ(t.role, Role::inout);
    }
  }
  EXPECT_TRUE(accepted && inter);
  Shape d = decode_shape(5);
  d.rollback = true;
  EXPECT_NE(op_def(OpKind::decode).validate(d), "");
}

TEST(WorkModel, PrefillCountsBothConventions) {
  Shape s;
  s.op = OpKind::prefill;
  s.seqlens = {8192};
  const auto w = op_def(OpKind::prefill).work(s);
  EXPECT_DOUBLE_EQ(w.flops, 8192.0 * 32 * (6.0 * 128 * 128 + 4.0 * 64 * 256));
  EXPECT_DOUBLE_EQ(w.flops_fi, 4.0 * 8192 * 32 * 128 * 128);
  const double state = 32.0 * 128 * 128 * 4;
  EXPECT_DOUBLE_EQ(w.bytes, 8192.0 * (2 * 16 * 128 + 32 * 128) * 2 + 8192.0 * 32 * 128 * 2 + 8.0 * 8192 * 32 + 2 * state);
  EXPECT_FALSE(w.bandwidth_bound);
}

TEST(Tensors, DecodeListsPoolInItsLayoutAndIndicesInTheirDtype) {
  auto s = decode_shape(3);
  s.pool = 10;
  s.layout = Layout::kv;
  s.index_dtype = DType::i32;
  s.gate = GateForm::raw;
  bool pool = false, idx = false, a_log = false;
  for (auto& t : op_def(OpKind::decode).tensors(s)) {
    if (t.name == "pool") pool = t.dims == std::vector<int64_t>{10, 32, 128, 128} && t.role == Role::inout;
    if (t.name == "indices") idx = t.dtype == DType::i32 && t.dims == std::vector<int64_t>{3};
    if (t.name == "A_log") a_log = t.dims == std::vector<int64_t>{32};
    EXPECT_NE(t.name, "g") << "the raw gate has no g tensor";
  }
  EXPECT_TRUE(pool && idx && a_log);
}

TEST(Validate, RejectsImpossibleShapes) {
  auto s = decode_shape(4);
  s.h_v = 24;  // 24 % 16 != 0
  EXPECT_NE(op_def(OpKind::decode).validate(s), "");
  s = decode_shape(4);
  s.pool = 2;  // fewer slots than rows
  EXPECT_NE(op_def(OpKind::decode).validate(s), "");
  Shape p;
  p.op = OpKind::prefill;
  EXPECT_NE(op_def(OpKind::prefill).validate(p), "") << "no sequences";
}

}  // namespace
}  // namespace gdn

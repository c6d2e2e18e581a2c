// 8-bit state pools in the prefill pool form (docs/method.md 2.1, 2.4, 2.5): the reference by hand
// on one token, the reference quantizing only what it stores (h0 read as codes x scales, the
// running state in full precision, the final state and every checkpoint through the host
// quantizer), prefill/cpu verified on ragged batches with checkpoints and -1 slots, a tampered
// checkpoint scale caught, the byte model, and the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "checkpoint_continuation.h"
#include "core/checkpoints.h"
#include "core/half.h"
#include "core/op.h"
#include "core/registry.h"
#include "core/slot.h"
#include "core/state_quant.h"
#include "reference/reference.h"
#include "run/backend.h"
#include "run/problem.h"
#include "run/runner.h"
#include "run/verify.h"
#include "test_support.h"

namespace gdn {
namespace {

// A pool-form prefill over an 8-bit (or any) pool, vk, with room for its checkpoints.
Shape pooled_8bit(DType state, std::vector<int64_t> seqlens, int64_t every, int K = 32, int V = 48, int HV = 2) {
  Shape s = op_def(OpKind::prefill).default_shape();
  s.seqlens = std::move(seqlens);
  s.h_qk = 1, s.h_v = HV, s.dk = K, s.dv = V;
  s.layout = Layout::vk;
  s.state_dtype = state;
  s.checkpoint_every = every;
  int64_t needed = int64_t(s.seqlens.size());
  for (auto l : s.seqlens) needed += every > 0 ? l / every : 0;
  s.pool = needed + 4;  // slots no one names: codes and scales must stay bit-identical
  return s;
}

// Writes element i of a host input tensor: f32, a 16-bit float, or an 8-bit code.
void put(const Tensor& t, int64_t i, double x) {
  if (t.spec.dtype == DType::f32) t.as<float>()[i] = float(x);
  else if (quant::is_8bit(t.spec.dtype)) t.as<int8_t>()[i] = int8_t(x);
  else t.as<uint16_t>()[i] = float_to_half(t.spec.dtype, float(x));
}

TEST(Prefill8bit, ReferenceByHandOnOneInt8Token) {
  // K = 2, V = 1: one value row of two codes. Slot 0 holds codes (127, -64) at scale 1/16, so
  // h0 = (7.9375, -4). One token k = (1, 0), q = (0, 1), v = 2, g = 0, beta = 1/2:
  // p = 7.9375, d = (2 - 7.9375) / 2 = -2.96875, S = (4.96875, -4), o = -4 (scale 1).
  Shape s = pooled_8bit(DType::i8, {1}, 0, 2, 1, 1);
  s.l2norm = false, s.scale = 1.0, s.pool = 2;
  auto backend = make_cpu_backend(1);
  Problem p(s, *backend, 1, 1);
  const TensorSet& in = p.inputs();
  for (auto [name, values] : std::vector<std::pair<std::string, std::vector<double>>>{
           {"q", {0, 1}}, {"k", {1, 0}}, {"v", {2}}, {"g", {0}}, {"beta", {0.5}}, {"pool", {127, -64}}, {"pool_scale", {0.0625}}})
    for (size_t i = 0; i < values.size(); ++i) put(in.at(name), int64_t(i), values[i]);
  ASSERT_EQ(slot_at(in.at("indices").data, in.at("indices").spec.dtype, 0), 0);
  const auto r = ref::prefill_recurrent(s, in);
  EXPECT_DOUBLE_EQ(r.o[0], -4.0);  // from the unquantized state
  // Stored: absmax 4.96875 maps to code 127; -4 r = -102.24 rounds to code -102.
  const float scale = 4.96875f / 127.f;  // the stored values are code x scale in fp32
  EXPECT_DOUBLE_EQ(r.ht[0], double(127.f * scale));
  EXPECT_DOUBLE_EQ(r.ht[1], double(-102.f * scale));
  // The hand values agree with the host quantizer the variants use.
  float row[2] = {4.96875f, -4.f};
  uint8_t codes[2];
  EXPECT_EQ(quant::quantize_row(DType::i8, row, 2, codes), scale);
  EXPECT_EQ(int8_t(codes[0]), 127);
  EXPECT_EQ(int8_t(codes[1]), -102);
}

// The 8-bit pool's reference against an f32 pool holding the same values (power-of-two scales, so
// code x scale is exact in fp32): o is the same (the running state is never quantized), and the
// final states and checkpoints are the f32 pool's ones sent through the quantizer row by row.
TEST(Prefill8bit, ReferenceQuantizesOnlyTheStatesItStores) {
  for (DType d : {DType::fp8e4m3, DType::i8}) {
    SCOPED_TRACE(to_string(d));
    const Shape q8 = pooled_8bit(d, {130, 64, 0, 200}, 64, 16, 8);
    Shape f32 = q8;
    f32.state_dtype = DType::f32;
    auto backend = make_cpu_backend(2);
    Problem a(q8, *backend, 9, 2), b(f32, *backend, 9, 2);
    const Tensor &codes = a.inputs().at("pool"), &scales = a.inputs().at("pool_scale"), &values = b.inputs().at("pool");
    for (int64_t row = 0; row < scales.numel(); ++row) scales.as<float>()[row] = std::ldexp(1.f, int(row % 7) - 8);
    for (int64_t i = 0; i < codes.numel(); ++i) values.as<float>()[i] = float(ref::load_state_value(codes, &scales, i));
    for (const auto& [name, t] : b.inputs().all())  // the same tokens, gates and tables
      if (name != "pool") std::memcpy(t.data, a.inputs().at(name).data, t.bytes());
    const auto rq = ref::prefill_recurrent(q8, a.inputs()), rf = ref::prefill_recurrent(f32, b.inputs());
    EXPECT_EQ(rq.o, rf.o);
    auto expect_quantized = [&](const std::vector<double>& got, const std::vector<double>& full, const char* what) {
      ASSERT_EQ(got.size(), full.size());
      std::vector<float> row(size_t(q8.dk));
      std::vector<uint8_t> c(size_t(q8.dk));
      int64_t rows = 0;
      for (size_t at = 0; at < full.size(); at += row.size()) {
        if (std::isnan(full[at])) continue;  // a sequence without checkpoint j
        for (size_t k = 0; k < row.size(); ++k) row[k] = float(full[at + k]);
        quant::round_trip_row(d, row.data(), int64_t(row.size()), c.data());
        for (size_t k = 0; k < row.size(); ++k) ASSERT_EQ(got[at + k], double(row[k])) << what << " at " << at + k;
        ++rows;
      }
      EXPECT_GT(rows, 0) << what;
    };
    expect_quantized(rq.ht, rf.ht, "final state");
    expect_quantized(rq.checkpoints, rf.checkpoints, "checkpoints");
    EXPECT_NE(rq.ht, rf.ht);  // the quantizer did something
  }
}

// The chunked reference (what verification uses on long prompts) stores the same quantized states
// as the recurrence: both quantize the fp64 state at the same positions.
TEST(Prefill8bit, ChunkedReferenceStoresTheRecurrencesQuantizedStates) {
  for (DType d : {DType::fp8e4m3, DType::i8}) {
    SCOPED_TRACE(to_string(d));
    const Shape s = pooled_8bit(d, {300, 0, 129, 64}, 64, 32, 16);
    auto backend = make_cpu_backend(2);
    Problem p(s, *backend, 13, 2);
    const auto rec = ref::prefill_recurrent(s, p.inputs()), chk = ref::prefill_chunked(s, p.inputs(), 64);
    auto rel = [](const std::vector<double>& x, const std::vector<double>& r) {
      double d2 = 0, r2 = 0;
      for (size_t i = 0; i < r.size(); ++i)
        if (!std::isnan(r[i])) d2 += (x[i] - r[i]) * (x[i] - r[i]), r2 += r[i] * r[i];
      return std::sqrt(d2 / r2);
    };
    EXPECT_LT(rel(chk.o, rec.o), 1e-10);
    // Equal up to a rare one-code flip where the two forms straddle a rounding boundary.
    EXPECT_LT(rel(chk.ht, rec.ht), 1e-6);
    EXPECT_LT(rel(chk.checkpoints, rec.checkpoints), 1e-6);
  }
}

const Variant& variant(const char* name) {
  const Variant* v = Registry::instance().find(name);
  if (!v) throw std::logic_error(std::string(name) + " is not registered");
  return *v;
}

// prefill/cpu through the real verifier: every check passes, checkpoints are compared when the
// shape has written ones, and untouched slots (codes and scales) are bit-identical.
void expect_cpu_verifies(const Shape& s) {
  SCOPED_TRACE(s.key());
  ASSERT_EQ(op_def(s.op).validate(s), "");
  ASSERT_EQ(variant("prefill/cpu").supports(s), "");
  auto backend = make_cpu_backend(2);
  const Verification v = verify_variant(variant("prefill/cpu"), s, *backend, 5);
  EXPECT_TRUE(v.pass);
  bool saw_checkpoints = false;
  for (const auto& c : v.checks) {
    EXPECT_TRUE(c.pass) << c.tensor << " rel " << c.rel_l2 << " tol " << c.tolerance << " unwritten " << c.unwritten
                        << " untouched_diff " << c.untouched_diff << " nonfinite " << c.nonfinite;
    EXPECT_GT(c.checked, 0) << c.tensor;
    EXPECT_EQ(c.untouched_diff, 0) << c.tensor;
    // The host quantizer on both sides: only fp32-vs-fp64 differences and rare one-code flips.
    if (c.tensor != "o") EXPECT_LE(c.rel_l2, 1e-3) << c.tensor;
    saw_checkpoints = saw_checkpoints || c.tensor == "checkpoints";
  }
  EXPECT_EQ(saw_checkpoints, s.has_checkpoints());
}

TEST(Prefill8bit, CpuVerifiesRaggedBatchesWithCheckpointsAndPaddedSlots) {
  for (DType d : {DType::fp8e4m3, DType::i8}) {
    expect_cpu_verifies(pooled_8bit(d, {130, 1, 0, 257, 64}, 64));  // ragged, empty, one token, end = checkpoint
    expect_cpu_verifies(pooled_8bit(d, {300, 70}, 0));              // no checkpoints
    Shape padded = pooled_8bit(d, {64, 200, 129, 77, 3, 256, 65, 190, 128}, 64);
    padded.indices = IndexPattern::padded;  // sequence 7 has slot -1, every 8th checkpoint entry is -1
    expect_cpu_verifies(padded);
    Shape high = pooled_8bit(d, {200, 90}, 0, 128, 128, 2);
    high.indices = IndexPattern::high, high.index_dtype = DType::i32, high.gate = GateForm::raw;
    high.checkpoint_at = {{64, 192}, {64}};  // explicit lists
    high.pool = 12;
    expect_cpu_verifies(high);
  }
}

TEST(Prefill8bit, StressInputsVerify) {
  for (DType d : {DType::fp8e4m3, DType::i8})
    for (auto dist : {InputDist::strong_decay, InputDist::no_decay, InputDist::beta_one}) {
      Shape s = pooled_8bit(d, {192, 100}, 64, 64, 32);
      s.inputs = dist;
      expect_cpu_verifies(s);
    }
}

// A prompt split at a checkpoint continues from the quantized checkpoint: o and the final state
// stay within the 8-bit tolerance of the unsplit prompt (the split adds one quantization). The
// outputs after the split show that quantization; the final state may not, where the decay has
// shrunk it below the final store's rounding (fp8's power-of-two scale does not move with it).
TEST(Prefill8bit, APromptSplitAtACheckpointContinuesToTheUnsplitResult) {
  auto backend = make_cpu_backend(2);
  for (DType d : {DType::fp8e4m3, DType::i8})
    for (const int64_t p : {64, 256}) {
      Shape s = pooled_8bit(d, {300}, 0);
      s.pool = 4, s.indices = IndexPattern::random;
      SCOPED_TRACE(s.key() + " split at " + std::to_string(p));
      const auto c = test::continue_from_checkpoint(variant("prefill/cpu"), *backend, s, p, 21);
      EXPECT_LT(c.o_rel, 1e-2);
      EXPECT_LT(c.state_rel, 1e-2);
      EXPECT_FALSE(c.o_identical);  // the checkpoint was quantized, and the split shows it
      std::printf("  %s split at %lld: o %.2e, state %.2e%s\n", std::string(to_string(d)).c_str(), static_cast<long long>(p),
                  c.o_rel, c.state_rel, c.state_identical ? " (identical)" : "");
    }
}

// A checkpoint slot whose codes are right but whose scale is wrong must fail: the verifier reads
// checkpoints as code x scale, not as raw codes.
TEST(Prefill8bit, AWrongCheckpointScaleFailsVerification) {
  const Shape s = pooled_8bit(DType::fp8e4m3, {256}, 128);
  auto backend = make_cpu_backend(2);
  Problem p(s, *backend, 5, 2);
  p.reset_device();
  variant("prefill/cpu").launch(s, p.device(), backend->launch_context());
  p.download();
  const Tensor& table = p.inputs().at("checkpoint_indices");
  const int64_t slot = slot_at(table.data, table.spec.dtype, 0);
  ASSERT_GE(slot, 0);
  float* scales = p.results().at("pool_scale").as<float>() + slot * s.h_v * s.dv;
  for (int i = 0; i < s.dv; ++i) scales[i] *= 1.25f;  // every row of head 0: 25 % too large
  std::string scope;
  const auto sel = choose_selection(s, std::nullopt, 4e10, scope);
  const auto v = check_outputs(p, effective_tolerances(s, variant("prefill/cpu").tolerances), sel, 2);
  EXPECT_FALSE(v.pass);
  for (const auto& c : v.checks)
    if (c.tensor == "checkpoints" || c.tensor == "pool_scale") EXPECT_FALSE(c.pass) << c.tensor << " " << c.rel_l2;
    else EXPECT_TRUE(c.pass) << c.tensor;  // 1.25 is no power of two: the scale rule fails too
}

TEST(Prefill8bit, ByteModelCountsCodesAndRowScalesOfEveryStateMoved) {
  for (DType d : {DType::fp8e4m3, DType::i8}) {
    const Shape q8 = pooled_8bit(d, {256, 100}, 64, 128, 128, 4);
    Shape f32 = q8;
    f32.state_dtype = DType::f32;
    const int64_t written = checkpoints_written(q8);
    ASSERT_EQ(written, 5);  // 4 + 1 checkpoints, the identity pattern skips none
    const double states = 2.0 * 2 + double(written);  // read and written per sequence, each checkpoint written
    const double f32_bytes = states * 4 * 128 * 128 * 4.0, q8_bytes = states * (4 * 128 * 128 + 4.0 * 4 * 128);
    EXPECT_DOUBLE_EQ(op_def(q8.op).work(q8).bytes - q8_bytes, op_def(f32.op).work(f32).bytes - f32_bytes);
  }
}

TEST(Prefill8bit, RefusalsNameTheirReason) {
  Shape dense = pooled_8bit(DType::i8, {64}, 0);
  dense.pool = 0;
  EXPECT_NE(op_def(dense.op).validate(dense).find("pool form"), std::string::npos) << op_def(dense.op).validate(dense);
  Shape kv = pooled_8bit(DType::fp8e4m3, {128}, 64);
  kv.layout = Layout::kv;
  EXPECT_NE(op_def(kv.op).validate(kv).find("layout vk"), std::string::npos) << op_def(kv.op).validate(kv);
  const Shape ok = pooled_8bit(DType::fp8e4m3, {128}, 64);
  for (const char* name : {"prefill/cuda_recurrent", "prefill/sm75_legacy"})
    if (const Variant* v = Registry::instance().find(name))
      EXPECT_NE(v->supports(ok).find("fp8e4m3 state pools"), std::string::npos) << name << ": " << v->supports(ok);
}

// prefill/sm90 takes 8-bit pools on the two-pass schedule, split or not: its default plan is
// two_pass where an f32 pool's is fused, and a spec naming the fused schedule is refused.
TEST(Prefill8bit, Sm90RunsTheTwoPassScanOnly) {
  const Variant* v = Registry::instance().find("prefill/sm90");
  if (v == nullptr) GTEST_SKIP() << "prefill/sm90 is not built";
  for (DType d : {DType::fp8e4m3, DType::i8}) {
    Shape s = pooled_8bit(d, {4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096}, 1024, 128, 128, 32);
    s.h_qk = 16;  // GVA 2 over 8 x 4096: the f32 pool's default there is the fused schedule
    EXPECT_EQ(v->supports(s), "") << to_string(d);
    EXPECT_NE(v->plan(s).find("two_pass"), std::string::npos) << v->plan(s);
    Shape one = pooled_8bit(d, {65536}, 0, 128, 128, 2);  // split into segments, as an f32 pool's
    EXPECT_EQ(v->supports(one), "");
    EXPECT_NE(v->plan(one).find("context parallel"), std::string::npos) << v->plan(one);
    s.plan = "cp=2";
    EXPECT_EQ(v->supports(s), "");
    s.plan = "schedule=fused";
    EXPECT_NE(v->supports(s).find("8-bit state pools run schedule=two_pass"), std::string::npos) << v->supports(s);
  }
}

// The real binary: prefill/cpu verifies an 8-bit pool with checkpoints (exit 0); the dense form
// and the kv layout exit 3 naming why.
TEST(Prefill8bit, CommandLine) {
  auto run = [](const std::string& args) { return test::run_shell(std::string(GDN_BINARY) + " " + args + " 2>&1"); };
  auto r = run("verify --op prefill --variant prefill/cpu -a pool=8 -a state_dtype=int8 -a layout=vk "
               "-a seqlens=200,64 -a checkpoints=64 -a heads=1/2 -a head_dim=32");
  EXPECT_EQ(r.code, 0) << r.out;
  r = run("verify --op prefill --variant prefill/cpu -a state_dtype=fp8e4m3 -a layout=vk -a seqlens=64");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("pool form"), std::string::npos) << r.out;
  r = run("verify --op prefill --variant prefill/cpu -a pool=4 -a state_dtype=int8 -a layout=kv -a seqlens=64");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("layout vk"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace gdn

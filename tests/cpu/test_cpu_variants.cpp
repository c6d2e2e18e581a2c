// The CPU variants (prefill/cpu, decode/cpu, mtp/cpu) against the fp64 reference: seeded inputs,
// poisoned outputs, then relative L2 error, unwritten elements, padding rows and untouched pool
// slots. Also the parallel_for helper they share.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/slot.h"
#include "core/parallel_for.h"
#include "core/op.h"
#include "core/registry.h"
#include "decode/op.h"
#include "reference/reference.h"
#include "run/inputs.h"

namespace gdn {
namespace {

// Host tensors of one problem, allocated per the op's contract: inputs filled from the seeded
// generator, outputs poisoned.
struct HostProblem {
  Shape shape;
  std::vector<std::vector<uint64_t>> storage;  // 8-byte aligned backing memory per tensor
  TensorSet tensors;

  HostProblem(const Shape& s, uint64_t seed) : shape(s) {
    if (auto why = op_def(s.op).validate(s); !why.empty()) throw std::invalid_argument("bad test shape: " + why);
    for (const auto& spec : op_def(s.op).tensors(s)) {
      storage.emplace_back((spec.bytes() + 7) / 8);
      void* data = storage.back().data();
      if (spec.role == Role::output) poison(spec, data);
      else fill_input(s, spec, data, seed, 1);
      tensors.add(Tensor{data, spec});
    }
  }
  const Tensor& at(const std::string& name) const { return tensors.at(name); }
};

double value_at(const Tensor& t, int64_t i) { return ref::load(t, i); }

// Relative L2 error ||x - ref|| / ||ref|| accumulated element by element.
struct ErrorSum {
  double diff2 = 0, ref2 = 0;
  void add(double x, double r) { diff2 += (x - r) * (x - r), ref2 += r * r; }
  double rel() const { return ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2); }
};

int64_t count_poison(const Tensor& t) {
  int64_t n = 0;
  for (int64_t i = 0; i < t.numel(); ++i) n += is_poison(t.spec, t.data, i) ? 1 : 0;
  return n;
}

int64_t count_nonfinite(const Tensor& t) {
  int64_t n = 0;
  for (int64_t i = 0; i < t.numel(); ++i) n += std::isfinite(value_at(t, i)) ? 0 : 1;
  return n;
}

void launch(const std::string& name, HostProblem& p, int threads = 2) {
  const Variant* v = Registry::instance().find(name);
  ASSERT_NE(v, nullptr) << name << " is not registered";
  ASSERT_EQ(v->backend, Backend::cpu);
  ASSERT_EQ(v->supports(p.shape), "") << name << " refuses " << p.shape.key();
  LaunchContext ctx;
  ctx.num_threads = threads;
  v->launch(p.shape, p.tensors, ctx);
}

// Tolerances of the fp32 CPU path: o is rounded to 16 bits, states are fp32 or bf16.
constexpr double kOutTol = 5e-3;
constexpr double kF32StateTol = 1e-4;
constexpr double kBf16StateTol = 5e-3;

// ---- prefill ------------------------------------------------------------------------------

Shape prefill_shape(std::vector<int64_t> seqlens, int K = 64, int V = 64, int H = 2, int HV = 4) {
  Shape s;
  s.op = OpKind::prefill;
  s.seqlens = std::move(seqlens);
  s.dk = K, s.dv = V, s.h_qk = H, s.h_v = HV;
  s.layout = Layout::kv;
  return s;
}

void check_prefill(const Shape& s, uint64_t seed = 7) {
  SCOPED_TRACE(s.key());
  HostProblem p(s, seed);
  const auto want = ref::prefill_recurrent(s, p.tensors, {}, 2);
  launch("prefill/cpu", p);
  const Tensor &o = p.at("o"), &ht = p.at("ht");
  EXPECT_EQ(count_poison(o), 0);
  EXPECT_EQ(count_poison(ht), 0);
  EXPECT_EQ(count_nonfinite(o), 0);
  EXPECT_EQ(count_nonfinite(ht), 0);
  ErrorSum eo, eh;
  for (int64_t i = 0; i < o.numel(); ++i) eo.add(value_at(o, i), want.o[size_t(i)]);
  for (int64_t i = 0; i < ht.numel(); ++i) eh.add(value_at(ht, i), want.ht[size_t(i)]);
  EXPECT_LT(eo.rel(), kOutTol);
  EXPECT_LT(eh.rel(), kF32StateTol);
}

TEST(PrefillCpu, RaggedVarlenGroupOfTwoKvLayout) { check_prefill(prefill_shape({1, 17, 64, 100})); }

// Empty sequences (repeated cu_seqlens entries) first, inside and last: no o rows, and the final
// state is the initial one, bit for bit (zeros without h0); the contract accepts them, not a batch
// without a token.
TEST(PrefillCpu, EmptySequencesKeepTheirState) {
  for (const bool h0 : {true, false}) {
    auto s = prefill_shape({0, 40, 0, 0, 70, 0});
    s.has_h0 = h0;
    EXPECT_EQ(op_def(OpKind::prefill).validate(s), "");
    check_prefill(s);
    HostProblem p(s, 3);
    launch("prefill/cpu", p);
    const Tensor& ht = p.at("ht");
    const int64_t slot = ht.numel() / 6;
    for (const int64_t n : {0, 2, 3, 5})
      for (int64_t i = 0; i < slot; ++i) {
        const double want = h0 ? value_at(p.at("h0"), n * slot + i) : 0.0;
        ASSERT_EQ(value_at(ht, n * slot + i), want) << "sequence " << n << ", element " << i;
      }
  }
  auto none = prefill_shape({0, 0});
  EXPECT_NE(op_def(OpKind::prefill).validate(none), "");
}

TEST(PrefillCpu, RaggedVarlenGroupOfFourVkLayoutWithoutH0) {
  auto s = prefill_shape({100, 1, 64, 17}, 64, 64, 1, 4);
  s.layout = Layout::vk;
  s.has_h0 = false;
  check_prefill(s);
}

TEST(PrefillCpu, RawGateBothLayouts) {
  for (auto layout : {Layout::kv, Layout::vk}) {
    auto s = prefill_shape({33, 8}, 32, 32);
    s.gate = GateForm::raw;
    s.layout = layout;
    check_prefill(s);
  }
}

TEST(PrefillCpu, EveryInputDistribution) {
  for (auto dist : {InputDist::strong_decay, InputDist::no_decay, InputDist::beta_one, InputDist::positive_keys}) {
    for (auto layout : {Layout::kv, Layout::vk}) {
      auto s = prefill_shape({40, 17}, 32, 32);
      s.inputs = dist;
      s.layout = layout;
      check_prefill(s);
    }
  }
}

TEST(PrefillCpu, Fp16Inputs) {
  auto s = prefill_shape({17, 30}, 32, 64);
  s.input_dtype = DType::f16;
  check_prefill(s);
}

// Without the in-kernel norm the inputs are rows of norm 1/2 to 1 (normalised up front), so a
// kernel that normalises anyway gives other outputs: the flag is honoured.
TEST(PrefillCpu, WithoutL2Norm) {
  for (auto layout : {Layout::kv, Layout::vk}) {
    auto s = prefill_shape({1, 3, 2}, 32, 32);
    s.l2norm = false;
    s.layout = layout;
    check_prefill(s);
  }
}

// Head sizes that are not multiples of the vector blocks exercise every loop tail.
TEST(PrefillCpu, OddHeadSizes) {
  for (auto layout : {Layout::kv, Layout::vk}) {
    auto s = prefill_shape({9, 20}, 37, 19, 1, 3);
    s.layout = layout;
    check_prefill(s);
    s = prefill_shape({5}, 7, 50, 2, 2);
    s.layout = layout;
    check_prefill(s);
  }
}

TEST(PrefillCpu, ProductionHeadSize128) {
  for (auto layout : {Layout::kv, Layout::vk}) {
    auto s = prefill_shape({48, 5}, 128, 128, 1, 2);
    s.layout = layout;
    check_prefill(s);
  }
}

// Every task is independent, so the result cannot depend on the thread count. The shapes carry
// enough work for worker_count to start several threads.
void expect_same_bits_on_1_and_3_threads(const std::string& variant, const Shape& s) {
  SCOPED_TRACE(variant);
  HostProblem one(s, 3), many(s, 3);
  launch(variant, one, 1);
  launch(variant, many, 3);
  for (const auto& [name, t] : one.tensors.all())
    EXPECT_EQ(std::memcmp(t.data, many.at(name).data, t.bytes()), 0) << name;
}

TEST(PrefillCpu, ThreadCountDoesNotChangeBits) {
  expect_same_bits_on_1_and_3_threads("prefill/cpu", prefill_shape({1, 17, 64, 100}));
}

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const auto* b = static_cast<const uint8_t*>(t.data);
  return std::vector<uint8_t>(b, b + t.bytes());
}

// The pool form (docs/method.md 2.1): each sequence starts from its slot (index -1: from zero) and writes
// its final state back there; every other slot stays bit-identical, and the reference agrees.
void check_prefill_pool(const Shape& s, uint64_t seed = 9) {
  SCOPED_TRACE(s.key());
  ASSERT_TRUE(s.prefill_pool());
  HostProblem p(s, seed);
  EXPECT_FALSE(p.tensors.has("h0"));
  EXPECT_FALSE(p.tensors.has("ht"));
  const auto want = ref::prefill_recurrent(s, p.tensors, {}, 2);  // before the launch: in place
  const auto pool_before = bytes_of(p.at("pool"));
  launch("prefill/cpu", p);
  const int64_t N = int64_t(s.seqlens.size()), HV = s.h_v, KV = int64_t(s.dk) * s.dv;
  const int64_t slot_bytes = HV * KV * int64_t(dtype_size(s.state_dtype));
  const Tensor &o = p.at("o"), &pool = p.at("pool"), &idx = p.at("indices");
  EXPECT_EQ(count_poison(o), 0);
  ErrorSum eo, es;
  for (int64_t i = 0; i < o.numel(); ++i) eo.add(value_at(o, i), want.o[size_t(i)]);
  EXPECT_LT(eo.rel(), kOutTol);
  std::set<int64_t> named;
  int64_t padding = 0;
  for (int64_t n = 0; n < N; ++n) {
    const int64_t slot = slot_at(idx.data, idx.spec.dtype, n);
    if (slot < 0) {
      ++padding;
      continue;
    }
    named.insert(slot);
    for (int64_t i = 0; i < HV * KV; ++i) es.add(value_at(pool, slot * HV * KV + i), want.ht[size_t(n * HV * KV + i)]);
  }
  EXPECT_LT(es.rel(), s.state_dtype == DType::bf16 ? kBf16StateTol : kF32StateTol);
  EXPECT_EQ(padding, s.indices == IndexPattern::padded ? N / 8 : 0);
  const auto pool_after = bytes_of(pool);
  for (int64_t slot = 0; slot < s.pool_slots(); ++slot) {
    if (named.count(slot)) continue;
    ASSERT_EQ(std::memcmp(pool_before.data() + slot * slot_bytes, pool_after.data() + slot * slot_bytes,
                          size_t(slot_bytes)),
              0)
        << "pool slot " << slot << " changed";
  }
}

TEST(PrefillCpu, PoolFormEveryIndexPatternBothDtypesBothLayouts) {
  // 17 sequences: ragged, single-token ones, longer than a chunk; the padded pattern gives -1 to
  // sequences 7 and 15.
  const std::vector<int64_t> lens{1, 17, 64, 100, 1, 3, 65, 9, 2, 40, 1, 1, 77, 5, 6, 129, 8};
  for (const IndexPattern pattern : {IndexPattern::identity, IndexPattern::random, IndexPattern::padded, IndexPattern::high})
    for (const DType state : {DType::f32, DType::bf16})
      for (const Layout layout : {Layout::kv, Layout::vk}) {
        auto s = prefill_shape(lens, 32, 48, 1, 2);
        s.pool = 3 * int64_t(lens.size()) + 1;
        s.indices = pattern, s.state_dtype = state, s.layout = layout;
        s.index_dtype = pattern == IndexPattern::random ? DType::i32 : DType::i64;
        check_prefill_pool(s);
      }
}

TEST(PrefillCpu, PoolFormKeysAndContract) {
  auto dense = prefill_shape({100, 37});
  EXPECT_EQ(dense.key(), "h2/4 d64x64 seq=100+37 layout=kv gate=log");  // no pool axes in a dense key
  auto pooled = dense;
  pooled.pool = 8, pooled.indices = IndexPattern::padded, pooled.index_dtype = DType::i32, pooled.state_dtype = DType::bf16;
  EXPECT_EQ(pooled.key(), "h2/4 d64x64 seq=100+37 state=bf16 layout=kv pool=8 idx=padded/i32 gate=log");
  EXPECT_EQ(op_def(OpKind::prefill).validate(pooled), "");
  pooled.has_h0 = false;
  EXPECT_NE(op_def(OpKind::prefill).validate(pooled), "");
  pooled.has_h0 = true;
  pooled.pool = 1;  // fewer slots than sequences
  EXPECT_NE(op_def(OpKind::prefill).validate(pooled), "");
  // Every GPU prefill variant takes the form (sm90 at its head size).
  pooled.pool = 8;
  auto pooled128 = pooled;
  pooled128.dk = pooled128.dv = 128;
  for (const char* name : {"prefill/sm75_legacy", "prefill/cuda_recurrent", "prefill/sm90"})
    if (const Variant* v = Registry::instance().find(name); v != nullptr && v->supports)
      EXPECT_EQ(v->supports(pooled128), "") << name;
}

// ---- decode and mtp -------------------------------------------------------------------------

Shape step_shape(OpKind op, int64_t batch, int K = 64, int V = 64, int H = 2, int HV = 4) {
  Shape s;
  s.op = op;
  s.batch = batch;
  s.tokens = op == OpKind::mtp ? 4 : 1;
  s.dk = K, s.dv = V, s.h_qk = H, s.h_v = HV;
  return s;
}

void check_step(const Shape& s, uint64_t seed = 11) {
  SCOPED_TRACE(s.key());
  const std::string name = s.op == OpKind::mtp ? "mtp/cpu" : "decode/cpu";
  HostProblem p(s, seed);
  const auto want = ref::step(s, p.tensors, {}, 2);  // before the launch: the pool is updated in place
  const auto pool_before = bytes_of(p.at("pool"));
  launch(name, p);

  const int64_t B = s.batch, T = s.op == OpKind::mtp ? s.tokens : 1, HV = s.h_v;
  const int64_t KV = int64_t(s.dk) * s.dv, slot_bytes = HV * KV * int64_t(dtype_size(s.state_dtype));
  const bool cache = s.op == OpKind::mtp && s.cache_intermediate;
  const bool update = s.op != OpKind::mtp || s.update_state;
  const double state_tol = s.state_dtype == DType::bf16 ? kBf16StateTol : kF32StateTol;
  const Tensor &o = p.at("o"), &pool = p.at("pool"), &idx = p.at("indices");

  EXPECT_EQ(count_poison(o), 0);
  EXPECT_EQ(count_nonfinite(o), 0);
  ErrorSum eo, es, ei;
  for (int64_t i = 0; i < o.numel(); ++i) eo.add(value_at(o, i), want.o[size_t(i)]);
  EXPECT_LT(eo.rel(), kOutTol);

  std::set<int64_t> named;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t slot = slot_at(idx.data, idx.spec.dtype, b);
    const int64_t row_elems = T * HV * s.dv;
    if (slot < 0) {  // padding row: o and intermediate exactly zero
      for (int64_t i = b * row_elems; i < (b + 1) * row_elems; ++i) ASSERT_EQ(value_at(o, i), 0.0) << "row " << b;
      if (cache) {
        const Tensor& inter = p.at("intermediate");
        for (int64_t i = b * T * HV * KV; i < (b + 1) * T * HV * KV; ++i)
          ASSERT_EQ(value_at(inter, i), 0.0) << "intermediate of padding row " << b;
      }
      continue;
    }
    named.insert(slot);
    if (update)
      for (int64_t i = 0; i < HV * KV; ++i)
        es.add(value_at(pool, slot * HV * KV + i), want.state[size_t(b * HV * KV + i)]);
  }
  if (update) {
    EXPECT_LT(es.rel(), state_tol);
  }

  // Slots no row names (every slot when the pool is read only) are bit-identical.
  const auto pool_after = bytes_of(pool);
  for (int64_t slot = 0; slot < s.pool_slots(); ++slot) {
    if (update && named.count(slot)) continue;
    ASSERT_EQ(std::memcmp(pool_before.data() + slot * slot_bytes, pool_after.data() + slot * slot_bytes,
                          size_t(slot_bytes)),
              0)
        << "pool slot " << slot << " changed";
  }

  EXPECT_EQ(p.tensors.has("intermediate"), cache);
  if (cache) {
    const Tensor& inter = p.at("intermediate");
    EXPECT_EQ(count_poison(inter), 0);
    EXPECT_EQ(count_nonfinite(inter), 0);
    for (int64_t i = 0; i < inter.numel(); ++i) ei.add(value_at(inter, i), want.intermediate[size_t(i)]);
    EXPECT_LT(ei.rel(), state_tol);
  }
}

TEST(DecodeCpu, BothLayoutsBothPoolDtypes) {
  for (auto layout : {Layout::vk, Layout::kv}) {
    for (auto state : {DType::f32, DType::bf16}) {
      auto s = step_shape(OpKind::decode, 8);
      s.layout = layout;
      s.state_dtype = state;
      check_step(s);
    }
  }
}

TEST(DecodeCpu, PaddedInt32IndicesInLargerPool) {
  for (auto layout : {Layout::vk, Layout::kv}) {
    auto s = step_shape(OpKind::decode, 16, 32, 32, 1, 4);  // rows 7 and 15 are padding
    s.pool = 40;
    s.indices = IndexPattern::padded;
    s.index_dtype = DType::i32;
    s.layout = layout;
    check_step(s);
  }
}

TEST(DecodeCpu, HighSlotsRandomSlotsBf16Pool) {
  for (auto pattern : {IndexPattern::high, IndexPattern::random}) {
    auto s = step_shape(OpKind::decode, 9, 32, 32);
    s.pool = 37;
    s.indices = pattern;
    s.state_dtype = DType::bf16;
    check_step(s);
  }
}

TEST(DecodeCpu, RawGateFp16InputsNoL2Norm) {
  for (auto layout : {Layout::vk, Layout::kv}) {
    auto s = step_shape(OpKind::decode, 5, 32, 48);
    s.gate = GateForm::raw;
    s.input_dtype = DType::f16;
    s.layout = layout;
    check_step(s);
    s.l2norm = false;
    check_step(s);
  }
}

TEST(DecodeCpu, EveryInputDistribution) {
  for (auto dist : {InputDist::strong_decay, InputDist::no_decay, InputDist::beta_one, InputDist::positive_keys}) {
    for (auto gate : {GateForm::log, GateForm::raw}) {
      auto s = step_shape(OpKind::decode, 4, 32, 32);
      s.inputs = dist;
      s.gate = gate;
      check_step(s);
    }
  }
}

TEST(DecodeCpu, OddHeadSizesAndProductionSize) {
  for (auto layout : {Layout::vk, Layout::kv}) {
    auto s = step_shape(OpKind::decode, 3, 37, 19, 1, 3);
    s.layout = layout;
    check_step(s);
    s = step_shape(OpKind::decode, 2, 5, 6, 1, 1);  // narrower than one vector
    s.layout = layout;
    check_step(s);
    s = step_shape(OpKind::decode, 4, 128, 128, 1, 2);
    s.layout = layout;
    check_step(s);
  }
}

TEST(MtpCpu, TokensTwoToEightCacheOnAndOff) {
  for (int T : {2, 3, 5, 8}) {
    for (bool cache : {true, false}) {
      auto s = step_shape(OpKind::mtp, 3, 32, 32);
      s.tokens = T;
      s.cache_intermediate = cache;
      s.layout = T % 2 ? Layout::kv : Layout::vk;
      check_step(s);
    }
  }
}

TEST(MtpCpu, ReadOnlyPoolWithCache) {
  for (auto state : {DType::f32, DType::bf16}) {
    auto s = step_shape(OpKind::mtp, 4, 32, 32);
    s.tokens = 6;
    s.update_state = false;
    s.cache_intermediate = true;
    s.state_dtype = state;
    check_step(s);
    s.cache_intermediate = false;
    check_step(s);
  }
}

TEST(MtpCpu, PaddedRowsZeroTheirIntermediateBf16Pool) {
  for (auto layout : {Layout::vk, Layout::kv}) {
    auto s = step_shape(OpKind::mtp, 9, 32, 32, 1, 2);  // row 7 is padding
    s.tokens = 4;
    s.pool = 20;
    s.indices = IndexPattern::padded;
    s.index_dtype = DType::i32;
    s.cache_intermediate = true;
    s.state_dtype = DType::bf16;
    s.layout = layout;
    check_step(s);
  }
}

TEST(MtpCpu, SixteenTokensHighSlotsRawGateGroupOfFour) {
  auto s = step_shape(OpKind::mtp, 5, 64, 64, 1, 4);
  s.tokens = 16;  // the longest draft docs/method.md 2.3 requires
  s.pool = 64;
  s.indices = IndexPattern::high;
  s.gate = GateForm::raw;
  s.inputs = InputDist::strong_decay;
  s.cache_intermediate = true;
  check_step(s);
}

TEST(MtpCpu, RollbackFromTheCacheBothLayoutsPoolsAndUpdateModes) {
  for (auto layout : {Layout::vk, Layout::kv})
    for (auto state : {DType::f32, DType::bf16})
      for (bool update : {true, false}) {
        auto s = step_shape(OpKind::mtp, 9, 32, 32, 1, 2);  // row 7 is padding
        s.tokens = 4;
        s.pool = 20;
        s.indices = IndexPattern::padded;
        s.cache_intermediate = true;
        s.rollback = true;
        s.update_state = update;
        s.state_dtype = state;
        s.layout = layout;
        check_step(s);
      }
}

TEST(MtpCpu, ThreadCountDoesNotChangeBits) {
  for (auto layout : {Layout::vk, Layout::kv}) {
    auto s = step_shape(OpKind::mtp, 9, 128, 128, 1, 2);  // row 7 is padding
    s.tokens = 3;
    s.pool = 12;
    s.indices = IndexPattern::padded;
    s.cache_intermediate = true;
    s.layout = layout;
    expect_same_bits_on_1_and_3_threads("mtp/cpu", s);
  }
}

// ---- parallel_for ---------------------------------------------------------------------------

TEST(CpuParallelFor, VisitsEveryTaskOnceWithDenseWorkerIds) {
  for (int requested : {0, 1, 3, 8}) {
    const int64_t tasks = 1000;
    const int workers = worker_count(tasks, requested);
    ASSERT_GE(workers, 1);
    if (requested > 0) {
      EXPECT_EQ(workers, requested);
    }
    std::vector<std::atomic<int>> seen(tasks);
    std::atomic<bool> bad_worker{false};
    parallel_for(tasks, workers, [&](int64_t i, int w) {
      seen[size_t(i)].fetch_add(1);
      if (w < 0 || w >= workers) bad_worker = true;
    });
    for (int64_t i = 0; i < tasks; ++i) ASSERT_EQ(seen[size_t(i)].load(), 1) << "task " << i;
    EXPECT_FALSE(bad_worker.load());
  }
  EXPECT_EQ(worker_count(2, 16), 2);  // never more workers than tasks
  EXPECT_EQ(worker_count(0, 4), 1);
  // Tiny tasks share threads: 32 heads of one 128 x 128 decode token fill two workers.
  EXPECT_EQ(worker_count(32, 16, 128.0 * 128.0), 2);
  EXPECT_EQ(worker_count(32, 16, 1.0), 1);
}

TEST(CpuParallelFor, RethrowsTheFirstError) {
  EXPECT_THROW(parallel_for(100, 3,
                                 [](int64_t i, int) {
                                   if (i == 42) throw std::runtime_error("task 42 failed");
                                 }),
               std::runtime_error);
  // The pool is still whole afterwards.
  std::atomic<int64_t> sum{0};
  parallel_for(100, 3, [&](int64_t i, int) { sum += i; });
  EXPECT_EQ(sum.load(), 4950);
}

// The pooled helpers across many calls with a changing worker count (a benchmark's loop), a
// call nested inside a task (refused by the pool: it starts its own threads), and two callers at
// once (one gets the pool, the other its own threads): every task exactly once, every time.
TEST(CpuParallelFor, PooledHelpersSurviveRepeatsNestingAndConcurrentCallers) {
  for (int call = 0; call < 2000; ++call) {
    const int workers = 1 + call % 4;
    std::atomic<int64_t> sum{0};
    parallel_for(64, workers, [&](int64_t i, int w) {
      ASSERT_LT(w, workers);
      sum += i;
    });
    ASSERT_EQ(sum.load(), 64 * 63 / 2) << "call " << call;
  }
  std::atomic<int64_t> inner{0};
  parallel_for(8, 3, [&](int64_t, int) { parallel_for(10, 2, [&](int64_t j, int) { inner += j; }); });
  EXPECT_EQ(inner.load(), 8 * 45);
  std::atomic<int64_t> a{0}, b{0};
  std::thread other([&] {
    for (int r = 0; r < 200; ++r) parallel_for(50, 3, [&](int64_t i, int) { b += i; });
  });
  for (int r = 0; r < 200; ++r) parallel_for(50, 3, [&](int64_t i, int) { a += i; });
  other.join();
  EXPECT_EQ(a.load(), 200 * 1225);
  EXPECT_EQ(b.load(), 200 * 1225);
}

}  // namespace
}  // namespace gdn

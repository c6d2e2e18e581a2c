// Every registered CUDA variant against the fp64 reference on small shapes of its op (seeded
// inputs, poisoned outputs, untouched pool slots compared bit for bit; see verify_variant).
// Real variants must pass; test-only variants carry a deliberate bug and must fail, with the
// failing tensor named. Without a CUDA device every case skips with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "test_support.h"
#include "core/op.h"
#include "core/registry.h"
#include "run/backend.h"
#include "run/problem.h"
#include "run/runner.h"
#include "gpu_suite.h"

namespace gdn {
namespace {

constexpr uint64_t kSeed = 20240917;

struct Case {
  std::string label;
  Shape shape;
};

// ---- shapes ------------------------------------------------------------------------------

using test::prefill;

Shape step(OpKind op, int64_t batch, int tokens, int h_qk, int h_v, Layout layout) {
  return test::step_shape(op, batch, tokens, h_qk, h_v, layout);
}

template <class F> Case with(std::string label, Shape s, F edit) {
  edit(s);
  return {std::move(label), s};
}

const std::vector<int64_t> kRagged{1, 17, 64, 130};

std::vector<Case> prefill_cases() {
  using L = Layout;
  std::vector<Case> c;
  c.push_back({"ragged_gva2_kv", prefill(kRagged, 2, 4, L::kv)});
  c.push_back(with("ragged_gva4_vk_raw_no_h0", prefill(kRagged, 2, 8, L::vk), [](Shape& s) {
    s.gate = GateForm::raw;
    s.has_h0 = false;
  }));
  c.push_back(with("ragged_gva2_kv_no_h0", prefill(kRagged, 2, 4, L::kv), [](Shape& s) { s.has_h0 = false; }));
  // Unnormalised keys blow the state up over long sequences, so l2norm off uses one token each.
  c.push_back(with("single_tokens_no_l2norm", prefill({1, 1, 1}, 2, 4, L::kv), [](Shape& s) { s.l2norm = false; }));
  // Empty sequences (repeated cu_seqlens entries) first, inside and last: ht = h0 (zeros without).
  c.push_back({"empty_sequences_kv", prefill({0, 40, 0, 0, 70, 0}, 2, 4, L::kv)});
  c.push_back(with("empty_sequences_vk_no_h0", prefill({0, 65, 0}, 1, 2, L::vk), [](Shape& s) { s.has_h0 = false; }));
  c.push_back(with("f16_inputs", prefill({17, 64}, 2, 4, L::kv), [](Shape& s) { s.input_dtype = DType::f16; }));
  c.push_back(with("f16_inputs_vk_raw", prefill({3, 40}, 1, 4, L::vk), [](Shape& s) {
    s.input_dtype = DType::f16;
    s.gate = GateForm::raw;
  }));
  c.push_back(with("strong_decay", prefill({17, 64}, 2, 4, L::kv), [](Shape& s) { s.inputs = InputDist::strong_decay; }));
  c.push_back(with("no_decay", prefill({17, 64}, 2, 4, L::vk), [](Shape& s) { s.inputs = InputDist::no_decay; }));
  c.push_back(with("beta_one", prefill({17, 64}, 2, 4, L::kv), [](Shape& s) { s.inputs = InputDist::beta_one; }));
  c.push_back(with("positive_keys", prefill({17, 64}, 2, 4, L::vk), [](Shape& s) { s.inputs = InputDist::positive_keys; }));
  // Head sizes that are not multiples of 32 (partial value tiles, K not a warp multiple).
  c.push_back(with("k48_v80_gva3_kv", prefill({5, 33}, 1, 3, L::kv), [](Shape& s) { s.dk = 48, s.dv = 80; }));
  c.push_back(with("k72_v40_vk", prefill({9, 20}, 2, 2, L::vk), [](Shape& s) { s.dk = 72, s.dv = 40; }));
  c.push_back(with("k256_v256", prefill({9}, 1, 2, L::kv), [](Shape& s) { s.dk = s.dv = 256; }));
  return c;
}

std::vector<Case> decode_cases() {
  using L = Layout;
  const auto op = OpKind::decode;
  std::vector<Case> c;
  c.push_back({"vk_f32_gva2", step(op, 4, 1, 2, 4, L::vk)});
  c.push_back(with("kv_raw_gva4", step(op, 3, 1, 2, 8, L::kv), [](Shape& s) { s.gate = GateForm::raw; }));
  c.push_back(with("bf16_pool_vk", step(op, 5, 1, 2, 4, L::vk), [](Shape& s) { s.state_dtype = DType::bf16; }));
  c.push_back(with("bf16_pool_kv_raw", step(op, 5, 1, 2, 4, L::kv), [](Shape& s) {
    s.state_dtype = DType::bf16;
    s.gate = GateForm::raw;
  }));
  c.push_back(with("i32_padded_pool64", step(op, 16, 1, 2, 4, L::vk), [](Shape& s) {
    s.index_dtype = DType::i32;
    s.indices = IndexPattern::padded;
    s.pool = 64;
  }));
  c.push_back(with("high_pool40_kv", step(op, 8, 1, 2, 4, L::kv), [](Shape& s) {
    s.indices = IndexPattern::high;
    s.pool = 40;
  }));
  c.push_back(with("random_pool32_i32_bf16", step(op, 6, 1, 2, 4, L::vk), [](Shape& s) {
    s.indices = IndexPattern::random;
    s.index_dtype = DType::i32;
    s.state_dtype = DType::bf16;
    s.pool = 32;
  }));
  c.push_back(with("f16_inputs", step(op, 4, 1, 2, 4, L::vk), [](Shape& s) { s.input_dtype = DType::f16; }));
  c.push_back(with("no_l2norm", step(op, 4, 1, 2, 4, L::kv), [](Shape& s) { s.l2norm = false; }));
  c.push_back(with("strong_decay", step(op, 4, 1, 2, 4, L::vk), [](Shape& s) { s.inputs = InputDist::strong_decay; }));
  c.push_back(with("no_decay", step(op, 4, 1, 2, 4, L::kv), [](Shape& s) { s.inputs = InputDist::no_decay; }));
  c.push_back(with("beta_one", step(op, 4, 1, 2, 4, L::vk), [](Shape& s) { s.inputs = InputDist::beta_one; }));
  c.push_back(with("positive_keys", step(op, 4, 1, 2, 4, L::kv), [](Shape& s) { s.inputs = InputDist::positive_keys; }));
  c.push_back(with("k48_v80_gva2_padded", step(op, 9, 1, 2, 4, L::vk), [](Shape& s) {
    s.dk = 48, s.dv = 80;
    s.indices = IndexPattern::padded;
    s.pool = 12;
  }));
  // 32 heads x 128 x 128 fp32 = 2 MiB per slot; the top slots of 8200 start past 2^32 elements
  // (about 17 GB of pool), so any 32-bit offset arithmetic lands on the wrong slot.
  c.push_back(with("pool8200_high_past_2e32", step(op, 16, 1, 16, 32, L::vk), [](Shape& s) {
    s.indices = IndexPattern::high;
    s.pool = 8200;
  }));
  return c;
}

std::vector<Case> mtp_cases() {
  using L = Layout;
  const auto op = OpKind::mtp;
  std::vector<Case> c;
  c.push_back({"t2_vk", step(op, 3, 2, 2, 4, L::vk)});
  c.push_back(with("t4_cache_kv_bf16", step(op, 4, 4, 2, 4, L::kv), [](Shape& s) {
    s.cache_intermediate = true;
    s.state_dtype = DType::bf16;
  }));
  c.push_back(with("t8_cache_read_only_padded_i32", step(op, 16, 8, 2, 4, L::vk), [](Shape& s) {
    s.cache_intermediate = true;
    s.update_state = false;
    s.indices = IndexPattern::padded;
    s.index_dtype = DType::i32;
    s.pool = 48;
  }));
  c.push_back(with("t3_raw_gva4_high", step(op, 4, 3, 2, 8, L::vk), [](Shape& s) {
    s.gate = GateForm::raw;
    s.indices = IndexPattern::high;
    s.pool = 20;
  }));
  c.push_back(with("t5_read_only_kv", step(op, 3, 5, 2, 4, L::kv), [](Shape& s) { s.update_state = false; }));
  c.push_back(with("t4_rollback_vk_padded", step(op, 16, 4, 2, 4, L::vk), [](Shape& s) {
    s.cache_intermediate = true;
    s.rollback = true;
    s.indices = IndexPattern::padded;
    s.pool = 24;
  }));
  c.push_back(with("t3_rollback_kv_bf16", step(op, 6, 3, 2, 4, L::kv), [](Shape& s) {
    s.cache_intermediate = true;
    s.rollback = true;
    s.state_dtype = DType::bf16;
  }));
  c.push_back(with("t7_cache_f32_kv_random", step(op, 5, 7, 2, 4, L::kv), [](Shape& s) {
    s.cache_intermediate = true;
    s.indices = IndexPattern::random;
    s.pool = 11;
  }));
  c.push_back(with("t16_cache", step(op, 2, 16, 2, 4, L::vk), [](Shape& s) { s.cache_intermediate = true; }));
  c.push_back(with("t4_strong_decay", step(op, 3, 4, 2, 4, L::vk), [](Shape& s) { s.inputs = InputDist::strong_decay; }));
  c.push_back(with("t4_positive_keys_cache", step(op, 3, 4, 2, 4, L::kv), [](Shape& s) {
    s.inputs = InputDist::positive_keys;
    s.cache_intermediate = true;
  }));
  c.push_back(with("t6_f16_k64_v96_cache", step(op, 3, 6, 1, 2, L::vk), [](Shape& s) {
    s.input_dtype = DType::f16;
    s.dk = 64, s.dv = 96;
    s.cache_intermediate = true;
  }));
  return c;
}

std::vector<Case> cases_of(OpKind op) {
  switch (op) {
    case OpKind::prefill: return prefill_cases();
    case OpKind::decode: return decode_cases();
    case OpKind::mtp: return mtp_cases();
  }
  return {};
}

// A test-only variant's bug must show on grouped value heads with more than one q/k head
// (decode/broken maps heads by modulo, which is right when HV == H or H == 1).
bool shows_test_only_bug(const Shape& s) { return s.h_v > s.h_qk && s.h_qk > 1; }
bool is_huge(const Shape& s) { return s.pool_slots() > 4096; }

// MemAvailable (page cache counts as free); falls back to the free pages sysconf reports.
uint64_t host_free_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  while (meminfo >> key >> kib)
    if (key == "MemAvailable:") return kib << 10;
    else meminfo.ignore(256, '\n');
  return uint64_t(sysconf(_SC_AVPHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE));
}

// ---- parameters: (variant, case) --------------------------------------------------------

struct Param {
  std::string variant;
  Case c;
};

// Shown by gtest (and ctest's test list) instead of a byte dump.
void PrintTo(const Param& p, std::ostream* os) { *os << p.variant << " on " << p.c.label << " (" << p.c.shape.key() << ")"; }

std::vector<Param> all_params() {
  std::vector<Param> out;
  for (const auto& v : Registry::instance().variants()) {
    if (v.backend != Backend::cuda) continue;
    for (auto& c : cases_of(v.op)) out.push_back({v.name, c});
  }
  return out;
}

std::string param_name(const testing::TestParamInfo<Param>& info) {
  std::string n = info.param.variant + "__" + info.param.c.label;
  for (auto& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

class VariantVerification : public test::CudaSuite<Param> {};

TEST_P(VariantVerification, MatchesReference) {
  const Param& p = GetParam();
  const Variant* v = Registry::instance().find(p.variant);
  ASSERT_NE(v, nullptr);
  const Shape& s = p.c.shape;
  ASSERT_EQ(op_def(s.op).validate(s), "") << "bad test shape " << s.key();

  if (!backend_) GTEST_SKIP() << "CUDA backend unavailable: " << why_no_device_;
  if (auto why = backend_->can_run(*v); !why.empty()) GTEST_SKIP() << v->name << " cannot run here: " << why;
  if (auto why = v->supports(s); !why.empty()) GTEST_SKIP() << v->name << " does not support " << s.key() << ": " << why;
  if (v->test_only && !shows_test_only_bug(s)) GTEST_SKIP() << "the deliberate bug needs h_v > h_qk > 1";
  if (v->test_only && is_huge(s)) GTEST_SKIP() << "the large-pool case is for real variants";
  if (is_huge(s)) {
    const uint64_t need = Problem::footprint(s) + (uint64_t(1) << 30);  // 1 GiB headroom
    if (backend_->free_memory() < need)
      GTEST_SKIP() << "needs " << (need >> 20) << " MiB of device memory, " << (backend_->free_memory() >> 20)
                   << " MiB free";
    // The host keeps the generated inputs and the downloaded results: two copies of the pool.
    if (host_free_bytes() < 2 * need)
      GTEST_SKIP() << "needs " << (2 * need >> 20) << " MiB of free host memory, " << (host_free_bytes() >> 20)
                   << " MiB free";
  }

  const Verification result = verify_variant(*v, s, *backend_, kSeed);
  ASSERT_TRUE(result.ran);
  ASSERT_FALSE(result.checks.empty());
  if (!v->test_only) {
    EXPECT_TRUE(result.pass) << v->name << " on " << s.key() << "\n" << test::describe(result);
    return;
  }
  // The broken variant must be caught by its numbers: everything written and finite, but the
  // output (at least) off the reference.
  EXPECT_FALSE(result.pass) << v->name << " passed verification on " << s.key() << "\n" << test::describe(result);
  std::vector<std::string> failed;
  for (const auto& c : result.checks) {
    EXPECT_EQ(c.unwritten, 0) << c.tensor;
    EXPECT_EQ(c.nonfinite, 0) << c.tensor;
    if (!c.pass) failed.push_back(c.tensor);
  }
  EXPECT_NE(std::find(failed.begin(), failed.end(), "o"), failed.end()) << "expected o to fail\n" << test::describe(result);
  std::string names;
  for (const auto& f : failed) names += (names.empty() ? "" : ", ") + f;
  std::cout << "[ caught   ] " << v->name << " on " << p.c.label << ": " << names << " failed\n";
}

INSTANTIATE_TEST_SUITE_P(Cuda, VariantVerification, testing::ValuesIn(all_params()), param_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(VariantVerification);

// ---- host-side checks of the case list (run everywhere, CI included) ---------------------

TEST(VariantCases, EveryCaseIsAValidShape) {
  for (OpKind op : {OpKind::prefill, OpKind::decode, OpKind::mtp})
    for (const auto& c : cases_of(op)) {
      EXPECT_EQ(c.shape.op, op) << c.label;
      EXPECT_EQ(op_def(op).validate(c.shape), "") << c.label;
    }
}

TEST(VariantCases, EveryCudaVariantRunsSomeCase) {
  int cuda_variants = 0;
  for (const auto& v : Registry::instance().variants()) {
    if (v.backend != Backend::cuda) continue;
    ++cuda_variants;
    int supported = 0;
    for (const auto& c : cases_of(v.op))
      if (v.supports(c.shape).empty() && (!v.test_only || shows_test_only_bug(c.shape))) ++supported;
    EXPECT_GT(supported, 0) << v.name << " supports none of the " << to_string(v.op) << " cases";
  }
  EXPECT_GE(cuda_variants, 3) << "the simple CUDA variants are not linked into this test";
}

TEST(VariantCases, SimpleVariantsAreRegistered) {
  for (const char* name : {"prefill/cuda_recurrent", "decode/cuda_simple", "mtp/cuda_simple"}) {
    const Variant* v = Registry::instance().find(name);
    ASSERT_NE(v, nullptr) << name;
    EXPECT_EQ(v->backend, Backend::cuda);
    EXPECT_FALSE(v->test_only);
    EXPECT_EQ(v->min_arch, 75);
  }
  // Linked into the test executables only (tests/variants/); it must be hidden from globs.
  if (const Variant* broken = Registry::instance().find("decode/broken")) {
    EXPECT_TRUE(broken->test_only);
    for (const Variant* m : Registry::instance().match(OpKind::decode, "*")) EXPECT_NE(m->name, "decode/broken");
    EXPECT_EQ(Registry::instance().match(OpKind::decode, "broken").size(), 1u);
  }
}

TEST(VariantCases, SimpleVariantsRefuseOversizedK) {
  Shape s = step(OpKind::decode, 1, 1, 1, 1, Layout::vk);
  s.dk = 512;
  for (const char* name : {"decode/cuda_simple", "mtp/cuda_simple"}) {
    const Variant* v = Registry::instance().find(name);
    ASSERT_NE(v, nullptr) << name;
    EXPECT_NE(v->supports(s), "") << name;
  }
  Shape p = prefill({4}, 1, 1, Layout::kv);
  p.dk = 512;
  const Variant* v = Registry::instance().find("prefill/cuda_recurrent");
  ASSERT_NE(v, nullptr);
  EXPECT_NE(v->supports(p), "");
  p.dk = 256;
  EXPECT_EQ(v->supports(p), "");
}

}  // namespace
}  // namespace gdn

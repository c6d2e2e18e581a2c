// What the chunked prefill families' GPU tests share (test_prefill_sm90.cpp, test_prefill_sm80.cpp):
// the shapes that work a chunked kernel's machinery hard, and the launch that returns o and ht as
// bytes for the bit-level checks.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "core/registry.h"
#include "run/backend.h"
#include "run/problem.h"
#include "test_support.h"

namespace gdn::test {

template <class F> Shape with(Shape s, F edit) {
  edit(s);
  return s;
}
inline Shape with_plan(Shape s, const std::string& plan) {
  s.plan = plan;
  return s;
}

struct PrefillCase {
  std::string label;
  Shape shape;  // its plan: the spec under test ("" = the default plan)
};
inline void PrintTo(const PrefillCase& c, std::ostream* os) {
  *os << c.label << " (" << c.shape.key() << ", plan '" << c.shape.plan << "')";
}

// Partial and single-token chunks, zero-length sequences (repeated cu_seqlens entries: their ht
// must equal h0, or zero), every GVA ratio of Qwen3.5, both gate forms, l2norm off, f16 inputs,
// both state layouts, h0 absent, the stress inputs over many chunks (the state carries error from
// chunk to chunk), and the pool form (docs/method.md 2.1): slots named by random, padded (every
// 8th sequence -1: zeros, no write) and high indices, fp32 and bf16 pools, both layouts; the
// verifier also checks that every other slot is untouched.
inline std::vector<PrefillCase> hard_prefill_cases() {
  using L = Layout;
  // 1 token, a partial chunk, exactly one chunk, two chunks + 2, three chunks + 8.
  const std::vector<int64_t> ragged{1, 17, 64, 130, 200};
  std::vector<PrefillCase> c;
  c.push_back({"gva1_ragged_kv", prefill(ragged, 2, 2)});
  c.push_back({"gva2_ragged_vk", prefill(ragged, 2, 4, L::vk)});
  c.push_back({"gva3_ragged_kv_raw", with(prefill(ragged, 1, 3), [](Shape& s) { s.gate = GateForm::raw; })});
  c.push_back({"gva4_ragged_vk_no_h0", with(prefill(ragged, 2, 8, L::vk), [](Shape& s) { s.has_h0 = false; })});
  c.push_back({"zero_length_kv", prefill({0, 40, 0, 0, 70, 0}, 1, 2)});
  c.push_back({"zero_length_vk_no_h0", with(prefill({0, 65, 0}, 1, 2, L::vk), [](Shape& s) { s.has_h0 = false; })});
  c.push_back({"single_tokens_no_l2norm", with(prefill({1, 1, 1, 1}, 2, 4), [](Shape& s) { s.l2norm = false; })});
  c.push_back({"f16_ragged_raw_vk", with(prefill({3, 64, 100}, 1, 4, L::vk), [](Shape& s) {
                 s.input_dtype = DType::f16;
                 s.gate = GateForm::raw;
               })});
  c.push_back({"no_decay_2000", with(prefill({2000}, 1, 2, L::vk), [](Shape& s) { s.inputs = InputDist::no_decay; })});
  c.push_back({"strong_decay", with(prefill({700, 33}, 1, 2), [](Shape& s) { s.inputs = InputDist::strong_decay; })});
  c.push_back({"beta_one", with(prefill({500, 1}, 1, 2), [](Shape& s) { s.inputs = InputDist::beta_one; })});
  c.push_back({"positive_keys", with(prefill({500, 63}, 1, 2, L::vk), [](Shape& s) { s.inputs = InputDist::positive_keys; })});
  auto pool = [](Shape s, IndexPattern ip, DType sd, DType id) {
    s.pool = 3 * int64_t(s.seqlens.size()) + 5;
    s.indices = ip, s.state_dtype = sd, s.index_dtype = id;
    return s;
  };
  const std::vector<int64_t> nine{100, 37, 1, 0, 300, 64, 1, 9, 130};
  c.push_back({"pool_random_f32_kv", pool(prefill(nine, 2, 4), IndexPattern::random, DType::f32, DType::i64)});
  c.push_back({"pool_padded_bf16_vk", pool(prefill(nine, 2, 8, L::vk), IndexPattern::padded, DType::bf16, DType::i32)});
  c.push_back({"pool_high_f32_vk", pool(prefill(nine, 1, 2, L::vk), IndexPattern::high, DType::f32, DType::i32)});
  return c;
}

using Bytes = std::vector<unsigned char>;
inline Bytes bytes_of(const Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.data);
  return Bytes(p, p + t.bytes());
}

// Launches shape s (p's shape, or p's with another plan) once on p's fresh (poisoned) outputs and
// returns o and ht as downloaded.
inline std::pair<Bytes, Bytes> run_shape(const Variant& v, const Shape& s, Problem& p, ExecBackend& backend) {
  p.reset_device();
  v.launch(s, p.device(), backend.launch_context());
  backend.synchronize();
  p.download();
  return {bytes_of(p.results().at("o")), bytes_of(p.results().at("ht"))};
}

// Batch invariance: sequence n of `batch` (its tokens first .. first + count - 1, its h0 slot n)
// copied into the inputs of `alone`, a problem of that one sequence with the same heads (dense
// form, fp32 h0) ...
inline void copy_sequence_inputs(Problem& batch, Problem& alone, int64_t first, int64_t count, int64_t n) {
  const Shape& s = batch.shape();
  auto copy_rows = [&](const std::string& name, int64_t row_elems) {
    const Tensor& from = batch.inputs().at(name);
    const Tensor& to = alone.inputs().at(name);
    const size_t es = dtype_size(from.spec.dtype);
    std::memcpy(to.data, static_cast<const char*>(from.data) + first * row_elems * es, count * row_elems * es);
  };
  copy_rows("q", int64_t(s.h_qk) * s.dk);
  copy_rows("k", int64_t(s.h_qk) * s.dk);
  copy_rows("v", int64_t(s.h_v) * s.dv);
  copy_rows("g", s.h_v);
  copy_rows("beta", s.h_v);
  const size_t slot = size_t(s.h_v) * s.dk * s.dv * 4;
  std::memcpy(alone.inputs().at("h0").data, static_cast<const char*>(batch.inputs().at("h0").data) + n * slot, slot);
}
// ... and then its o rows and ht slot the same bits in both runs (bf16 o).
inline void expect_same_sequence_bits(const std::pair<Bytes, Bytes>& in_batch, const std::pair<Bytes, Bytes>& by_itself,
                                      const Shape& batch, int64_t first, int64_t count, int64_t n) {
  const size_t o_row = size_t(batch.h_v) * batch.dv * 2, slot = size_t(batch.h_v) * batch.dk * batch.dv * 4;
  EXPECT_EQ(std::memcmp(in_batch.first.data() + first * o_row, by_itself.first.data(), count * o_row), 0) << "o";
  EXPECT_EQ(std::memcmp(in_batch.second.data() + n * slot, by_itself.second.data(), slot), 0) << "ht";
}

}  // namespace gdn::test

// decode: one token per row, state pool updated in place, docs/method.md 2.2.
//
// Tensors (B = rows, P = pool slots):
//   q, k      [B, H, K]        bf16
//   v         [B, HV, V]       bf16
//   gate      log: g, beta [B, HV] fp32 | raw: A_log [HV], a [B, HV] bf16, dt_bias [HV], b [B, HV] bf16
//   pool      [P, HV, V, K] (vk) or [P, HV, K, V] (kv), fp32 or bf16, read and written in place
//   indices   [B]              int64 (or int32); -1 = padding row
//   o (out)   [B, HV, V]       bf16
// Row i reads and writes slot indices[i]; a padding row writes zeros to o and touches no slot.
// All pool offsets are 64-bit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/gate_args.h"
#include "core/op.h"
#include "core/shape.h"
#include "core/tensor.h"

namespace gdn {

// The contract of decode, shared by mtp (kernels/mtp/op.cpp): decode is mtp with T = 1, no cache.
std::vector<TensorSpec> step_tensors(const Shape& s);
WorkModel step_work(const Shape& s);
std::vector<Tolerance> step_tolerances(const Shape& s);
std::string step_validate(const Shape& s);

}  // namespace gdn

namespace gdn::decode {

// Shared by decode and mtp (decode is T = 1 with no cache and update_state on).
struct Args {
  int64_t B = 0, P = 0;
  int T = 1;
  int H = 0, HV = 0, K = 0, V = 0;
  Layout layout = Layout::vk;
  DType state_dtype = DType::f32;
  DType index_dtype = DType::i64;
  bool l2norm = true;
  float scale = 0.f;
  bool update_state = true;
  const uint16_t* q = nullptr;  // [B, T, H, K]
  const uint16_t* k = nullptr;
  const uint16_t* v = nullptr;  // [B, T, HV, V]
  GateArgs gate;                // rows = B * T
  void* pool = nullptr;         // state_dtype
  const void* indices = nullptr;
  uint16_t* o = nullptr;        // [B, T, HV, V]
  void* intermediate = nullptr; // mtp cache [B, T, HV, state], state_dtype; null when off
  const int32_t* accepted = nullptr;  // mtp rollback [B]: row b starts from intermediate[b, a - 1]
                                      // when a = accepted[b] > 0; null when off
  float* pool_scale = nullptr;          // 8-bit pools: [P, HV, V] fp32, one scale per row of K codes
  float* intermediate_scale = nullptr;  // 8-bit pools with the mtp cache: [B, T, HV, V]
};

Args make_args(const Shape& s, const TensorSet& t);

}  // namespace gdn::decode

// prefill: chunked forward over a packed (varlen) batch, docs/method.md 2.1.
//
// Tensors (T = total tokens, N = sequences):
//   q, k        [T, H, K]        bf16 (f16 where the variant supports it)
//   v           [T, HV, V]       same dtype as q
//   gate        log: g, beta [T, HV] fp32 | raw: A_log [HV], a [T, HV] bf16, dt_bias [HV], b [T, HV] bf16
//   cu_seqlens  [N + 1]          int32
//   h0          [N, HV, S0, S1]  fp32, optional (Shape::has_h0); layout kv = [K, V], vk = [V, K]
//   o  (out)    [T, HV, V]       same dtype as q
//   ht (out)    [N, HV, S0, S1]  fp32
// The pool form replaces h0 / ht with pool and indices, and may add the checkpoint tables below.
#pragma once

#include <cstdint>

#include "common/gate_args.h"
#include "core/shape.h"
#include "core/tensor.h"

namespace gdn::prefill {

struct Args {
  int64_t T = 0, N = 0;
  int H = 0, HV = 0, K = 0, V = 0;
  DType input_dtype = DType::bf16;
  Layout layout = Layout::kv;
  bool l2norm = true;
  float scale = 0.f;
  const uint16_t* q = nullptr;
  const uint16_t* k = nullptr;
  const uint16_t* v = nullptr;
  GateArgs gate;
  const int32_t* cu_seqlens = nullptr;
  const int32_t* cu_seqlens_host = nullptr;  // always host memory (launch planning)
  const float* h0 = nullptr;                 // null when absent (and in the pool form)
  uint16_t* o = nullptr;
  float* ht = nullptr;                       // null in the pool form
  // The pool form (docs/method.md 2.1; Shape::prefill_pool): sequence n starts from slot indices[n] of the
  // pool and writes its final state back there; -1 starts from zero and writes nothing.
  void* pool = nullptr;  // [P, HV, (layout)] in state_dtype; null in the dense form
  const void* indices = nullptr;
  int64_t P = 0;
  DType state_dtype = DType::f32, index_dtype = DType::i64;
  // Checkpoints (docs/method.md 2.4; pool form only): checkpoint j of sequence n, the state after
  // its token p (p counted from the sequence's start), goes to slot checkpoint_indices[n * J + j]
  // (index_dtype; -1: skip). p = (j + 1) * checkpoint_every, or checkpoint_positions[n * J + j]
  // (int32, increasing, 0 past the sequence's list) when the positions are explicit. J = 0 and
  // null tables: no checkpoints.
  const void* checkpoint_indices = nullptr;
  const int32_t* checkpoint_positions = nullptr;
  int64_t J = 0, checkpoint_every = 0;
  // An 8-bit pool's row scales (tensor pool_scale, docs/method.md 2.5) are not a field here: Args
  // is the sm90 kernels' first parameter, and growing it moves every later parameter (their SASS).
};

// Typed view of a problem's tensors. `cu_seqlens_host` is the host copy the runner keeps.
Args make_args(const Shape& s, const TensorSet& t, const int32_t* cu_seqlens_host);

}  // namespace gdn::prefill

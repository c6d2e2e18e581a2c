// prefill/cpu: the token recurrence on the host in fp32, one task per (sequence, value head);
// longest sequences are scheduled first so ragged batches balance. The state is worked on in a
// per-worker buffer (page-aligned, see scratch.h) in the kv order, the faster kernel while
// the state stays in cache: h0 is copied (vk: transposed) in once and ht out once; in the pool
// form the sequence's slot is read (widened from bf16, or from 8-bit codes with their row scales)
// and written back (rounded, or re-quantized with new scales) instead, and each checkpoint's state
// is stored to its slot the same way as the token it follows completes.
#include <algorithm>
#include <numeric>
#include <vector>

#include "core/parallel_for.h"
#include "core/slot.h"
#include "cpu/scratch.h"
#include "cpu/state.h"
#include "cpu/state_8bit.h"
#include "cpu/token.h"
#include "core/registry.h"
#include "prefill/op.h"

namespace gdn {
namespace {

// Slot `slot`'s part for head h (the pool form).
char* slot_head(const prefill::Args& a, int64_t slot, int h) {
  return static_cast<char*>(a.pool) + (slot * a.HV + h) * int64_t(a.K) * a.V * int64_t(dtype_size(a.state_dtype));
}

// The row scales of slot `slot`'s part for head h in an 8-bit pool's scale tensor (V of them, vk only).
float* slot_scales(const prefill::Args& a, float* pool_scale, int64_t slot, int h) {
  return pool_scale + (slot * a.HV + h) * a.V;
}

// Reads a pool slot's head into the [K][V] working state S, widened to fp32 (an 8-bit pool: its
// codes times their rows' scales in pool_scale).
void load_from_slot(const prefill::Args& a, float* pool_scale, int64_t slot, int h, float* stage, float* S) {
  const int64_t KV = int64_t(a.K) * a.V;
  const char* src = slot_head(a, slot, h);
  if (pool_scale) cpu::load_rows_8bit(a.state_dtype, src, slot_scales(a, pool_scale, slot, h), a.V, a.K, stage);
  else if (a.layout == Layout::vk) cpu::load_state(a.state_dtype, src, KV, stage);
  else return cpu::load_state(a.state_dtype, src, KV, S);
  cpu::transpose(stage, a.V, a.K, S);  // vk slots are [V][K]; the kernel wants [K][V]
}

// Stores the [K][V] working state into a pool slot's head, in the pool's layout and dtype (an
// 8-bit pool: each row of K values quantized with a new scale, docs/method.md 2.5).
void store_to_slot(const prefill::Args& a, float* pool_scale, const float* S, float* stage, int64_t slot, int h) {
  const int64_t KV = int64_t(a.K) * a.V;
  char* dst = slot_head(a, slot, h);
  if (a.layout == Layout::kv) return cpu::store_state(a.state_dtype, S, KV, dst);
  cpu::transpose(S, a.K, a.V, stage);
  if (pool_scale) cpu::store_rows_8bit(a.state_dtype, stage, a.V, a.K, dst, slot_scales(a, pool_scale, slot, h));
  else cpu::store_state(a.state_dtype, stage, KV, dst);
}

// Checkpoint j of sequence n (docs/method.md 2.4): its position (tokens from the sequence's
// start; 0 when the sequence has no checkpoint j) and slot (-1: skip).
struct Checkpoint {
  int64_t position = 0, slot = -1;
};
Checkpoint checkpoint_at(const prefill::Args& a, int64_t n, int64_t j, int64_t length) {
  if (j >= a.J) return {};
  const int64_t p = a.checkpoint_positions ? a.checkpoint_positions[n * a.J + j] : (j + 1) * a.checkpoint_every;
  if (p <= 0 || p > length) return {};
  return {p, slot_at(a.checkpoint_indices, a.index_dtype, n * a.J + j)};
}

// pool_scale: an 8-bit pool's row scales (null otherwise).
void run_sequence_head(const prefill::Args& a, float* pool_scale, const int32_t* cu, int64_t n, int h, cpu::Scratch& w) {
  const int64_t KV = int64_t(a.K) * a.V, slot = (n * a.HV + h) * KV;
  const bool transposed = a.layout == Layout::vk;  // slots are [V][K]; the kernel wants [K][V]
  float* S = w.state;
  float* stage = w.state + KV;  // the pool form: a slot widened to fp32 before its transpose
  // The pool form's slot of the sequence; -1 starts from zero and writes nothing.
  const int64_t own_slot = a.pool ? slot_at(a.indices, a.index_dtype, n) : -1;
  if (a.pool) {
    if (own_slot < 0) std::fill_n(S, KV, 0.f);
    else load_from_slot(a, pool_scale, own_slot, h, stage, S);
  } else if (!a.h0) {
    std::fill_n(S, KV, 0.f);
  } else if (transposed) {
    cpu::transpose(a.h0 + slot, a.V, a.K, S);
  } else {
    std::copy_n(a.h0 + slot, KV, S);
  }

  const int hk = h / (a.HV / a.H);
  int64_t j = 0;
  Checkpoint next = checkpoint_at(a, n, j, cu[n + 1] - cu[n]);
  for (int64_t t = cu[n]; t < cu[n + 1]; ++t) {
    const int64_t qk_row = (t * a.H + hk) * a.K, v_row = (t * a.HV + h) * int64_t(a.V);
    cpu::load_qk(a.input_dtype, a.q + qk_row, a.k + qk_row, a.K, a.l2norm, a.scale, w.q, w.k);
    cpu::load_half_row(a.input_dtype, a.v + v_row, a.V, w.v);
    const auto gate = cpu::gate_at(a.gate, t, a.HV, h);
    const cpu::StepInput in{w.q, w.k, w.v, gate.decay, gate.beta};
    cpu::step_kv(S, a.K, a.V, in, w.tmp, w.o);
    cpu::store_half_row(a.input_dtype, w.o, a.V, a.o + v_row);
    if (t + 1 - cu[n] == next.position) {
      if (next.slot >= 0) store_to_slot(a, pool_scale, S, stage, next.slot, h);
      next = checkpoint_at(a, n, ++j, cu[n + 1] - cu[n]);
    }
  }
  if (a.pool) {
    if (own_slot >= 0) store_to_slot(a, pool_scale, S, stage, own_slot, h);
    return;
  }
  if (transposed) cpu::transpose(S, a.K, a.V, a.ht + slot);
  else std::copy_n(S, KV, a.ht + slot);
}

void launch(const Shape& s, const TensorSet& t, const LaunchContext& ctx) {
  const auto a = prefill::make_args(s, t, t.ptr<const int32_t>("cu_seqlens"));
  const int32_t* cu = a.cu_seqlens_host ? a.cu_seqlens_host : a.cu_seqlens;
  float* pool_scale = t.ptr<float>("pool_scale");  // 8-bit pools only (not part of prefill::Args)

  std::vector<int64_t> order(a.N);
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return cu[x + 1] - cu[x] > cu[y + 1] - cu[y]; });

  const int64_t tasks = a.N * a.HV;
  const int workers = worker_count(tasks, ctx.num_threads, double(a.T) / double(a.N) * a.K * a.V);
  std::vector<cpu::Scratch> scratch;
  scratch.reserve(workers);
  for (int i = 0; i < workers; ++i) scratch.emplace_back((a.pool ? 2 : 1) * int64_t(a.K) * a.V, a.K, a.V);
  parallel_for(tasks, workers, [&](int64_t i, int worker) {
    run_sequence_head(a, pool_scale, cu, order[i / a.HV], int(i % a.HV), scratch[worker]);
  });
}

VariantRegistration reg{Variant{
    .name = "prefill/cpu",
    .op = OpKind::prefill,
    .backend = Backend::cpu,
    .description = "host fp32 token recurrence, threads over (sequence, value head); any K, V, layout",
    .supports = {},  // every shape the op accepts (OpDef::validate), 8-bit pools included
    .launch = launch,
    .tolerances = {{"ht", 1e-4}},  // fp32 all the way: ~1e-7 seen over 4000 tokens
}};

}  // namespace
}  // namespace gdn

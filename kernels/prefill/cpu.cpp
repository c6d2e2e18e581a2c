// prefill/cpu: the token recurrence on the host in fp32, one task per (sequence, value head);
// longest sequences are scheduled first so ragged batches balance. The state is worked on in a
// per-worker buffer (page-aligned, see scratch.h) in the kv order, the faster kernel while
// the state stays in cache: h0 is copied (vk: transposed) in once and ht out once; in the pool
// form the sequence's slot is read (widened from bf16) and written back (rounded) instead, and
// each checkpoint's state is stored to its slot as the token it follows completes.
#include <algorithm>
#include <numeric>
#include <vector>

#include "core/parallel_for.h"
#include "core/slot.h"
#include "core/state_format.h"
#include "cpu/scratch.h"
#include "cpu/state.h"
#include "cpu/token.h"
#include "core/registry.h"
#include "prefill/op.h"

namespace gdn {
namespace {

// Slot `slot`'s part for head h (the pool form).
char* slot_head(const prefill::Args& a, int64_t slot, int h) {
  return static_cast<char*>(a.pool) + (slot * a.HV + h) * int64_t(a.K) * a.V * int64_t(dtype_size(a.state_dtype));
}

// The pool form's slot of (sequence n, head h), or null for index -1 (start from zero, write nothing).
char* pool_slot(const prefill::Args& a, int64_t n, int h) {
  const int64_t slot = slot_at(a.indices, a.index_dtype, n);
  return slot < 0 ? nullptr : slot_head(a, slot, h);
}

// Stores the [K][V] working state into a pool slot's head, in the pool's layout and dtype.
void store_to_slot(const prefill::Args& a, const float* S, float* stage, char* dst) {
  const int64_t KV = int64_t(a.K) * a.V;
  if (a.layout == Layout::vk) cpu::transpose(S, a.K, a.V, stage), cpu::store_state(a.state_dtype, stage, KV, dst);
  else cpu::store_state(a.state_dtype, S, KV, dst);
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

void run_sequence_head(const prefill::Args& a, const int32_t* cu, int64_t n, int h, cpu::Scratch& w) {
  const int64_t KV = int64_t(a.K) * a.V, slot = (n * a.HV + h) * KV;
  const bool transposed = a.layout == Layout::vk;  // slots are [V][K]; the kernel wants [K][V]
  float* S = w.state;
  float* stage = w.state + KV;  // the pool form: a slot widened to fp32 before its transpose
  char* from_pool = a.pool ? pool_slot(a, n, h) : nullptr;
  if (a.pool) {
    if (!from_pool) std::fill_n(S, KV, 0.f);
    else if (transposed) cpu::load_state(a.state_dtype, from_pool, KV, stage), cpu::transpose(stage, a.V, a.K, S);
    else cpu::load_state(a.state_dtype, from_pool, KV, S);
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
      if (next.slot >= 0) store_to_slot(a, S, stage, slot_head(a, next.slot, h));
      next = checkpoint_at(a, n, ++j, cu[n + 1] - cu[n]);
    }
  }
  if (a.pool) {
    if (from_pool) store_to_slot(a, S, stage, from_pool);
    return;
  }
  if (transposed) cpu::transpose(S, a.K, a.V, a.ht + slot);
  else std::copy_n(S, KV, a.ht + slot);
}

void launch(const Shape& s, const TensorSet& t, const LaunchContext& ctx) {
  const auto a = prefill::make_args(s, t, t.ptr<const int32_t>("cu_seqlens"));
  const int32_t* cu = a.cu_seqlens_host ? a.cu_seqlens_host : a.cu_seqlens;

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
    run_sequence_head(a, cu, order[i / a.HV], int(i % a.HV), scratch[worker]);
  });
}

VariantRegistration reg{Variant{
    .name = "prefill/cpu",
    .op = OpKind::prefill,
    .backend = Backend::cpu,
    .description = "host fp32 token recurrence, threads over (sequence, value head); any K, V, layout",
    .supports = unsupported_8bit_state,  // every shape the op accepts but the 8-bit pool form
    .launch = launch,
    .tolerances = {{"ht", 1e-4}},  // fp32 all the way: ~1e-7 seen over 4000 tokens
}};

}  // namespace
}  // namespace gdn

// prefill/cpu: the token recurrence on the host in fp32, one task per (sequence, value head);
// longest sequences are scheduled first so ragged batches balance. The state is worked on in a
// per-worker buffer (page-aligned, see scratch.h) in the kv order, the faster kernel while
// the state stays in cache: h0 is copied (vk: transposed) in once and ht out once; in the pool
// form the sequence's slot is read (widened from bf16) and written back (rounded) instead.
#include <algorithm>
#include <numeric>
#include <vector>

#include "core/parallel_for.h"
#include "core/slot.h"
#include "cpu/scratch.h"
#include "cpu/state.h"
#include "cpu/token.h"
#include "core/registry.h"
#include "prefill/op.h"

namespace gdn {
namespace {

// The pool form's slot of (sequence n, head h), or null for index -1 (start from zero, write nothing).
char* pool_slot(const prefill::Args& a, int64_t n, int h) {
  const int64_t slot = slot_at(a.indices, a.index_dtype, n);
  if (slot < 0) return nullptr;
  return static_cast<char*>(a.pool) + (slot * a.HV + h) * int64_t(a.K) * a.V * int64_t(dtype_size(a.state_dtype));
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
  for (int64_t t = cu[n]; t < cu[n + 1]; ++t) {
    const int64_t qk_row = (t * a.H + hk) * a.K, v_row = (t * a.HV + h) * int64_t(a.V);
    cpu::load_qk(a.input_dtype, a.q + qk_row, a.k + qk_row, a.K, a.l2norm, a.scale, w.q, w.k);
    cpu::load_half_row(a.input_dtype, a.v + v_row, a.V, w.v);
    const auto gate = cpu::gate_at(a.gate, t, a.HV, h);
    const cpu::StepInput in{w.q, w.k, w.v, gate.decay, gate.beta};
    cpu::step_kv(S, a.K, a.V, in, w.tmp, w.o);
    cpu::store_half_row(a.input_dtype, w.o, a.V, a.o + v_row);
  }
  if (a.pool) {
    if (!from_pool) return;
    if (transposed) cpu::transpose(S, a.K, a.V, stage), cpu::store_state(a.state_dtype, stage, KV, from_pool);
    else cpu::store_state(a.state_dtype, S, KV, from_pool);
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
    .supports = {},  // every shape the op accepts (OpDef::validate) is supported
    .launch = launch,
    .tolerances = {{"ht", 1e-4}},  // fp32 all the way: ~1e-7 seen over 4000 tokens
}};

}  // namespace
}  // namespace gdn

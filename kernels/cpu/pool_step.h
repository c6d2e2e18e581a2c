// The decode and mtp CPU kernels (docs/method.md 2.2, 2.3): one task per (row, value head) runs
// the row's T tokens against its pool slot, with fp32 arithmetic whatever the pool dtype.
//
//   vk slots ([V][K]): state rows are independent, so a block of kVkRows rows is loaded once
//     (widened from bf16, or used in place in an fp32 pool that is written back), run through
//     all T tokens while it sits in L1, and stored once.
//   8-bit slots (vk only): each row of K codes is widened with its scale into the block buffer
//     and stored back quantized with a new scale per row (cpu/state_8bit.h).
//   kv slots ([K][V]): token by token over the whole state, in place in an fp32 pool that is
//     written back, else in a per-worker fp32 copy rounded back once at the end.
// With update_state off the slot is only read; the per-token cache goes to `intermediate`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/slot.h"
#include "core/parallel_for.h"
#include "cpu/scratch.h"
#include "cpu/state.h"
#include "cpu/state_8bit.h"
#include "cpu/token.h"
#include "decode/op.h"

namespace gdn::cpu {

struct PoolStepWorker {
  Scratch rows;                   // state copy (when not in place), T tokens of q, k, v, o
  std::vector<StepInput> tokens;  // the T tokens of the current task
  PoolStepWorker(int64_t state_elems, int K, int V, int T) : rows(state_elems, K, V, T), tokens(T) {}
};

// Where (row b, value head h) of the problem keeps its state and its T tokens.
struct PoolStepTask {
  const decode::Args& a;
  int64_t b;
  int h;
  int64_t KV() const { return int64_t(a.K) * a.V; }
  // State of head h in slot row `slot_row` of a [.., HV, KV] tensor in the pool's dtype (64-bit offsets).
  char* state(void* base, int64_t slot_row) const {
    return static_cast<char*>(base) + uint64_t((slot_row * a.HV + h) * KV()) * dtype_size(a.state_dtype);
  }
  // Row scales of the same state in an 8-bit pool's [.., HV, V] scale tensor.
  float* scales(float* base, int64_t slot_row) const { return base + (slot_row * a.HV + h) * int64_t(a.V); }
  int64_t token_row(int t) const { return b * a.T + t; }  // row of q, k, v, gate, o, intermediate
  uint16_t* out(int t) const { return a.o + (token_row(t) * a.HV + h) * int64_t(a.V); }
};

inline void zero_padding_row(const PoolStepTask& task) {
  const auto& a = task.a;
  for (int t = 0; t < a.T; ++t) {
    std::fill_n(task.out(t), a.V, uint16_t{0});
    if (a.intermediate) store_zeros(a.state_dtype, task.KV(), task.state(a.intermediate, task.token_row(t)));
    if (a.intermediate_scale) std::fill_n(task.scales(a.intermediate_scale, task.token_row(t)), a.V, 0.f);
  }
}

// Widens, normalises and scales the T tokens of the task into the worker's rows.
inline void load_tokens(const PoolStepTask& task, DType input_dtype, PoolStepWorker& w) {
  const auto& a = task.a;
  const int hk = task.h / (a.HV / a.H);
  for (int t = 0; t < a.T; ++t) {
    const int64_t r = task.token_row(t);
    const int64_t qk_row = (r * a.H + hk) * a.K, v_row = (r * a.HV + task.h) * int64_t(a.V);
    float *q = w.rows.q + int64_t(t) * a.K, *k = w.rows.k + int64_t(t) * a.K, *v = w.rows.v + int64_t(t) * a.V;
    load_qk(input_dtype, a.q + qk_row, a.k + qk_row, a.K, a.l2norm, a.scale, q, k);
    load_half_row(input_dtype, a.v + v_row, a.V, v);
    const auto gate = gate_at(a.gate, r, a.HV, task.h);
    w.tokens[size_t(t)] = StepInput{q, k, v, gate.decay, gate.beta};
  }
}

// Where a vk block's rows come from and go to: f32/bf16 values, or 8-bit codes with row scales
// (`from_scale`, `state_scale`: the scales of `from` and `state`, null for f32/bf16).
struct VkScales {
  const float* from = nullptr;
  float* state = nullptr;
};

inline void load_vk_rows(const decode::Args& a, const char* codes, const float* scales, int rows, float* s) {
  if (quant::is_8bit(a.state_dtype)) load_rows_8bit(a.state_dtype, codes, scales, rows, a.K, s);
  else load_state(a.state_dtype, codes, int64_t(rows) * a.K, s);
}

inline void store_vk_rows(const decode::Args& a, const float* s, int rows, char* dst, float* scales) {
  if (quant::is_8bit(a.state_dtype)) store_rows_8bit(a.state_dtype, s, rows, a.K, dst, scales);
  else store_state(a.state_dtype, s, int64_t(rows) * a.K, dst);
}

// `from`: where the starting state is read (the slot, or the cache entry a rollback names);
// `state`: the slot, written back.
inline void run_vk_slot(const PoolStepTask& task, const char* from, char* state, bool in_place, PoolStepWorker& w,
                        VkScales sc = {}) {
  const auto& a = task.a;
  const int64_t elem_bytes = int64_t(dtype_size(a.state_dtype)), row_bytes = a.K * elem_bytes;
  constexpr int kPrefetchBlocks = 2;  // the state streams from memory: ask for it ahead
  for (int j = 0; j < a.V; j += kVkRows) {  // a block of rows is contiguous: rows * K elements
    const int rows = std::min(kVkRows, a.V - j);
    const int64_t n = int64_t(rows) * a.K;
    char* src = state + j * row_bytes;
    if (j + (kPrefetchBlocks + 1) * kVkRows <= a.V)
      prefetch_for_write(src + kPrefetchBlocks * n * elem_bytes, n * elem_bytes);
    float* s = in_place ? reinterpret_cast<float*>(src) : w.rows.state;
    if (!in_place) load_vk_rows(a, from + j * row_bytes, sc.from ? sc.from + j : nullptr, rows, s);
    for (int t = 0; t < a.T; ++t) {
      step_vk_rows(s, a.K, rows, w.tokens[size_t(t)], j, w.rows.o + int64_t(t) * a.V + j);
      if (a.intermediate)
        store_vk_rows(a, s, rows, task.state(a.intermediate, task.token_row(t)) + j * row_bytes,
                      a.intermediate_scale ? task.scales(a.intermediate_scale, task.token_row(t)) + j : nullptr);
    }
    if (a.update_state && !in_place) store_vk_rows(a, s, rows, src, sc.state ? sc.state + j : nullptr);
  }
}

inline void run_kv_slot(const PoolStepTask& task, const char* from, char* state, bool in_place, PoolStepWorker& w) {
  const auto& a = task.a;
  const int64_t KV = task.KV();
  float* S = in_place ? reinterpret_cast<float*>(state) : w.rows.state;
  if (!in_place) load_state(a.state_dtype, from, KV, S);
  for (int t = 0; t < a.T; ++t) {
    step_kv(S, a.K, a.V, w.tokens[size_t(t)], w.rows.tmp, w.rows.o + int64_t(t) * a.V);
    if (a.intermediate) store_state(a.state_dtype, S, KV, task.state(a.intermediate, task.token_row(t)));
  }
  if (a.update_state && !in_place) store_state(a.state_dtype, S, KV, state);
}

// fp32 pools that are written back are updated in place; anything else goes through a buffer.
inline bool updates_in_place(const decode::Args& a) { return a.state_dtype == DType::f32 && a.update_state; }

inline void pool_step_task(const PoolStepTask& task, DType input_dtype, PoolStepWorker& w) {
  const auto& a = task.a;
  const int64_t slot = slot_at(a.indices, a.index_dtype, task.b);
  if (slot < 0) return zero_padding_row(task);  // padding row: touches no slot

  char* state = task.state(a.pool, slot);
  // Rollback: a row with a > 0 accepted tokens starts from the previous step's cache entry a - 1
  // (read before this step's cache stores reach it: block by block, or copied up front).
  const int32_t acc = a.accepted != nullptr ? a.accepted[task.b] : 0;
  const char* from = acc > 0 ? task.state(a.intermediate, task.token_row(acc - 1)) : state;
  const bool in_place = updates_in_place(a);
  if (in_place && from != state) std::memcpy(state, from, size_t(task.KV()) * dtype_size(a.state_dtype));
  w.rows.align_rows_to(in_place ? static_cast<void*>(state) : w.rows.state);
  load_tokens(task, input_dtype, w);
  VkScales sc;
  if (a.pool_scale) {  // an 8-bit pool: the scales of the slot and of the cache entry read
    sc.state = task.scales(a.pool_scale, slot);
    sc.from = acc > 0 ? task.scales(a.intermediate_scale, task.token_row(acc - 1)) : sc.state;
  }
  if (a.layout == Layout::vk) run_vk_slot(task, from, state, in_place, w, sc);
  else run_kv_slot(task, from, state, in_place, w);
  for (int t = 0; t < a.T; ++t) store_half_row(input_dtype, w.rows.o + int64_t(t) * a.V, a.V, task.out(t));
}

// Runs every (row, value head) of a decode or mtp problem on host memory.
inline void pool_step(const decode::Args& a, DType input_dtype, int num_threads) {
  const int64_t tasks = a.B * a.HV;
  const int workers = worker_count(tasks, num_threads, double(a.T) * a.K * a.V);
  // The buffer holds a block of rows (vk) or the whole state (kv) unless the pool is updated in place.
  const int64_t buffer = updates_in_place(a) ? 0 : a.layout == Layout::vk ? int64_t(kVkRows) * a.K : int64_t(a.K) * a.V;
  std::vector<PoolStepWorker> scratch;
  scratch.reserve(size_t(workers));
  for (int i = 0; i < workers; ++i) scratch.emplace_back(buffer, a.K, a.V, a.T);
  parallel_for(tasks, workers, [&](int64_t i, int worker) {
    pool_step_task(PoolStepTask{a, i / a.HV, int(i % a.HV)}, input_dtype, scratch[size_t(worker)]);
  });
}

}  // namespace gdn::cpu

// decode and mtp: the token recurrence per (row, value head) starting from the row's pool slot.
#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/parallel_for.h"
#include "core/slot.h"
#include "core/state_quant.h"
#include "reference/detail.h"
#include "reference/reference.h"

namespace gdn::ref {

using detail::Mat;

StepResult step(const Shape& s, const TensorSet& in, const Selection& sel, int threads) {
  if (s.op == OpKind::prefill) throw std::invalid_argument("ref::step handles decode and mtp, not prefill");
  const detail::Dims d(s);
  const int64_t B = s.batch, P = s.pool_slots(), KV = d.state_size();
  const int T = s.op == OpKind::mtp ? s.tokens : 1;
  const bool cache = s.op == OpKind::mtp && s.cache_intermediate;
  const auto heads = detail::resolve_heads(sel.heads, d.HV);
  const auto rows = detail::resolve_items(sel.seqs, B, "row");

  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  StepResult r;
  r.o.assign(size_t(B * T * d.HV * d.V), nan);
  r.state.assign(size_t(B * d.HV * KV), nan);
  if (cache) r.intermediate.assign(size_t(B * T * d.HV * KV), nan);

  const Tensor& idx = in.at("indices");
  const bool q8 = quant::is_8bit(s.state_dtype);
  if (idx.spec.dtype != DType::i32 && idx.spec.dtype != DType::i64)
    throw std::invalid_argument("indices must be i32 or i64 (got " + std::string(to_string(idx.spec.dtype)) + ")");

  const int64_t tasks = int64_t(rows.size()) * int64_t(heads.size());
  parallel_for(tasks, worker_count(tasks, threads), [&](int64_t task, int) {
    const int64_t b = rows[size_t(task / int64_t(heads.size()))];
    const int h = heads[size_t(task % int64_t(heads.size()))];
    const int64_t slot = slot_at(idx.data, idx.spec.dtype, b);
    if (slot == -1) {  // padding row: zero outputs, no state
      for (int t = 0; t < T; ++t) {
        const int64_t row = b * T + t;
        std::fill_n(r.o.data() + (row * d.HV + h) * d.V, d.V, 0.0);
        if (cache) std::fill_n(r.intermediate.data() + (row * d.HV + h) * KV, KV, 0.0);
      }
      return;
    }
    if (slot < 0 || slot >= P)
      throw std::out_of_range("row " + std::to_string(b) + " names pool slot " + std::to_string(slot) +
                              " outside 0.." + std::to_string(P - 1));
    // Rollback: a row with a > 0 accepted tokens starts from the previous step's cache entry.
    const int32_t acc = s.op == OpKind::mtp && s.rollback ? in.at("accepted").as<int32_t>()[b] : 0;
    if (acc < 0 || acc > T)
      throw std::out_of_range("row " + std::to_string(b) + " accepted " + std::to_string(acc) + " tokens, outside 0.." +
                              std::to_string(T));
    const std::string from = acc > 0 ? "intermediate" : "pool";
    const int64_t at = acc > 0 ? ((b * T + acc - 1) * d.HV + h) * KV : (slot * d.HV + h) * KV;
    Mat S = q8 ? detail::load_quantized_state(in.at(from), in.at(from + "_scale"), at, d.K, d.V)
               : detail::load_state(in.at(from), at, s.layout, d.K, d.V);
    // An 8-bit pool quantizes every state it stores (each cache entry, the slot); the running
    // state between an mtp row's tokens stays unquantized, as in the kernels' registers.
    auto stored = [&](const Mat& x) { return q8 ? detail::quantized(x, s.state_dtype) : x; };
    detail::TokenScratch w(d);
    for (int t = 0; t < T; ++t) {
      const int64_t row = b * T + t;  // token row of q, k, v, gate and o
      detail::recurrent_row(S, s, in, d, row, h, w, r.o.data() + (row * d.HV + h) * d.V);
      if (cache) detail::store_state(stored(S), s.layout, r.intermediate.data() + (row * d.HV + h) * KV);
    }
    detail::store_state(stored(S), s.layout, r.state.data() + (b * d.HV + h) * KV);
  });
  return r;
}

}  // namespace gdn::ref

#include "prefill/op.h"

#include <fmt/format.h>

#include "common/gate_tensors.h"
#include "core/checkpoints.h"
#include "core/op.h"
#include "core/state_format.h"
#include "core/state_quant.h"

namespace gdn {
namespace {

// [lead, HV, K, V] (kv) or [lead, HV, V, K] (vk).
std::vector<int64_t> state_dims(const Shape& s, int64_t lead) {
  return s.layout == Layout::kv ? std::vector<int64_t>{lead, s.h_v, s.dk, s.dv} : std::vector<int64_t>{lead, s.h_v, s.dv, s.dk};
}

std::vector<TensorSpec> tensors(const Shape& s) {
  const int64_t T = s.total_tokens(), N = int64_t(s.seqlens.size());
  std::vector<TensorSpec> t;
  t.push_back({"q", s.input_dtype, {T, s.h_qk, s.dk}, Role::input, Fill::qk});
  t.push_back({"k", s.input_dtype, {T, s.h_qk, s.dk}, Role::input, Fill::qk});
  t.push_back({"v", s.input_dtype, {T, s.h_v, s.dv}, Role::input, Fill::v});
  append_gate_tensors(t, s, {T});
  t.push_back({"cu_seqlens", DType::i32, {N + 1}, Role::input, Fill::cu_seqlens});
  if (s.prefill_pool()) {
    t.push_back({"pool", s.state_dtype, state_dims(s, s.pool_slots()), Role::inout, Fill::state});
    if (quant::is_8bit(s.state_dtype))  // vk only: one fp32 scale per row of K codes
      t.push_back({"pool_scale", DType::f32, {s.pool_slots(), s.h_v, s.dv}, Role::inout, Fill::state_scale});
    t.push_back({"indices", s.index_dtype, {N}, Role::input, Fill::indices});
    if (const int64_t J = checkpoint_columns(s); J > 0) {  // docs/method.md 2.4
      t.push_back({"checkpoint_indices", s.index_dtype, {N, J}, Role::input, Fill::checkpoint_indices});
      if (!s.checkpoint_at.empty())
        t.push_back({"checkpoint_positions", DType::i32, {N, J}, Role::input, Fill::checkpoint_positions});
    }
    t.push_back({"o", s.input_dtype, {T, s.h_v, s.dv}, Role::output});
    return t;
  }
  if (s.has_h0) t.push_back({"h0", DType::f32, state_dims(s, N), Role::input, Fill::state});
  t.push_back({"o", s.input_dtype, {T, s.h_v, s.dv}, Role::output});
  t.push_back({"ht", DType::f32, state_dims(s, N), Role::output});
  return t;
}

WorkModel work(const Shape& s) {
  const double T = double(s.total_tokens()), N = double(s.seqlens.size());
  const double e = double(dtype_size(s.input_dtype)), HK = double(s.h_qk) * s.dk, HVV = double(s.h_v) * s.dv;
  WorkModel w;
  if (s.prefill_pool()) {
    // Sequences with slot -1 (every 8th of the `padded` pattern) read and write no state.
    const double active = N - (s.indices == IndexPattern::padded ? double(int64_t(N) / 8) : 0.0);
    const double scales = quant::is_8bit(s.state_dtype) ? 4.0 * double(s.h_v) * s.dv : 0.0;
    const double slot = double(s.h_v) * s.dk * s.dv * double(dtype_size(s.state_dtype)) + scales;
    w.bytes = T * (2 * HK + HVV) * e + T * HVV * e + gate_bytes(s, T) + 2.0 * active * slot + 8.0 * N;
    // Each written checkpoint is one more state write; the table is read once.
    const double entry = double(dtype_size(s.index_dtype)) + (s.checkpoint_at.empty() ? 0.0 : 4.0);  // + a position
    const double table = N * double(checkpoint_columns(s)) * entry;
    w.bytes += double(checkpoints_written(s)) * slot + table;
  } else {
    const double state = N * s.h_v * double(s.dk) * s.dv * 4.0;
    w.bytes = T * (2 * HK + HVV) * e + T * HVV * e + gate_bytes(s, T) + (s.has_h0 ? state : 0.0) + state;
  }
  constexpr double C0 = 64;  // chunk size of the fused algorithm's useful-work count (FlashQLA)
  w.flops = T * s.h_v * (6.0 * s.dk * s.dv + 4.0 * C0 * (s.dk + s.dv));
  w.flops_fi = 4.0 * T * s.h_v * s.dk * s.dv;
  w.bandwidth_bound = false;
  return w;
}

std::vector<Tolerance> tolerances(const Shape& s) {
  if (!s.prefill_pool()) return {{"o", 5e-3}, {"ht", 5e-3}};
  const double pool = s.state_dtype == DType::f32 ? 5e-3 : 1e-2;
  if (s.has_checkpoints()) return {{"o", pool}, {"pool", pool}, {"checkpoints", pool}};
  return {{"o", pool}, {"pool", pool}};
}

std::string validate(const Shape& s) {
  if (auto r = validate_common(s); !r.empty()) return r;
  if (s.seqlens.empty()) return "prefill needs at least one sequence";
  int64_t total = 0;
  for (auto l : s.seqlens) {
    // 0 is legal (a repeated cu_seqlens entry: no output, final state = initial state).
    if (l < 0) return fmt::format("sequence lengths must be >= 0 (got {})", l);
    total += l;
  }
  if (total < 1) return "prefill needs at least one token in the batch";
  if (auto r = validate_state_format(s); !r.empty()) return r;
  if (total > (int64_t(1) << 31) - 1) return fmt::format("total tokens {} overflow int32 cu_seqlens", total);
  if (s.prefill_pool()) {
    if (!s.has_h0) return "h0: false has no meaning in the pool form (a sequence with index -1 starts from zero)";
    if (s.index_dtype != DType::i64 && s.index_dtype != DType::i32)
      return fmt::format("index dtype must be i64 or i32 (got {})", to_string(s.index_dtype));
    if (s.pool_slots() < int64_t(s.seqlens.size()))
      return fmt::format("pool must hold at least one slot per sequence ({} < {})", s.pool_slots(), s.seqlens.size());
  }
  return validate_checkpoints(s);
}

}  // namespace

// FLA's state layout, [K, V] per head.
Shape default_shape() {
  Shape s;
  s.op = OpKind::prefill;
  s.layout = Layout::kv;
  return s;
}

const OpDef kPrefillOp{OpKind::prefill, "prefill",
                       "chunked forward over a packed varlen batch (o and final state ht)",
                       tensors, work, tolerances, validate, default_shape};

namespace prefill {
Args make_args(const Shape& s, const TensorSet& t, const int32_t* cu_host) {
  Args a;
  a.T = s.total_tokens();
  a.N = int64_t(s.seqlens.size());
  a.H = s.h_qk, a.HV = s.h_v, a.K = s.dk, a.V = s.dv;
  a.input_dtype = s.input_dtype;
  a.layout = s.layout;
  a.l2norm = s.l2norm;
  a.scale = float(s.effective_scale());
  a.q = t.ptr<const uint16_t>("q");
  a.k = t.ptr<const uint16_t>("k");
  a.v = t.ptr<const uint16_t>("v");
  a.gate = make_gate_args(s, t);
  a.cu_seqlens = t.ptr<const int32_t>("cu_seqlens");
  a.cu_seqlens_host = cu_host;
  a.o = t.ptr<uint16_t>("o");
  if (s.prefill_pool()) {
    a.pool = t.ptr<void>("pool");
    a.indices = t.ptr<const void>("indices");
    a.P = s.pool_slots();
    a.state_dtype = s.state_dtype, a.index_dtype = s.index_dtype;
    a.checkpoint_indices = t.ptr<const void>("checkpoint_indices");
    a.checkpoint_positions = t.ptr<const int32_t>("checkpoint_positions");
    a.J = a.checkpoint_indices ? checkpoint_columns(s) : 0;
    a.checkpoint_every = s.checkpoint_every;
    return a;
  }
  a.h0 = t.ptr<const float>("h0");
  a.ht = t.ptr<float>("ht");
  return a;
}
}  // namespace prefill

}  // namespace gdn

#include "decode/op.h"

#include <fmt/format.h>

#include "common/gate_tensors.h"
#include "core/op.h"
#include "core/state_format.h"
#include "core/state_quant.h"

namespace gdn {

// decode and mtp share their tensor list: decode is T = 1 with no time axis.
std::vector<TensorSpec> step_tensors(const Shape& s) {
  const bool mtp = s.op == OpKind::mtp;
  const int64_t B = s.batch, T = s.tokens;
  auto rows = mtp ? std::vector<int64_t>{B, T} : std::vector<int64_t>{B};
  auto with = [&](std::vector<int64_t> tail) {
    auto d = rows;
    d.insert(d.end(), tail.begin(), tail.end());
    return d;
  };
  auto state = [&](std::vector<int64_t> lead) {
    lead.push_back(s.h_v);
    if (s.layout == Layout::vk) lead.insert(lead.end(), {s.dv, s.dk});
    else lead.insert(lead.end(), {s.dk, s.dv});
    return lead;
  };
  // An 8-bit pool's fp32 row scales ([.., HV, V]: one per row of K codes) sit beside it.
  auto scales = [&](std::vector<int64_t> lead) {
    lead.insert(lead.end(), {s.h_v, s.dv});
    return lead;
  };
  const bool q8 = quant::is_8bit(s.state_dtype);
  std::vector<TensorSpec> t;
  t.push_back({"q", s.input_dtype, with({s.h_qk, s.dk}), Role::input, Fill::qk});
  t.push_back({"k", s.input_dtype, with({s.h_qk, s.dk}), Role::input, Fill::qk});
  t.push_back({"v", s.input_dtype, with({s.h_v, s.dv}), Role::input, Fill::v});
  append_gate_tensors(t, s, rows);
  t.push_back({"pool", s.state_dtype, state({s.pool_slots()}), Role::inout, Fill::state});
  if (q8) t.push_back({"pool_scale", DType::f32, scales({s.pool_slots()}), Role::inout, Fill::state_scale});
  t.push_back({"indices", s.index_dtype, {B}, Role::input, Fill::indices});
  t.push_back({"o", s.input_dtype, with({s.h_v, s.dv}), Role::output});
  if (mtp && s.rollback) t.push_back({"accepted", DType::i32, {B}, Role::input, Fill::accepted});
  // With rollback the cache is also the previous step's: an input that this step overwrites.
  if (mtp && s.cache_intermediate)
    t.push_back({"intermediate", s.state_dtype, state(rows), s.rollback ? Role::inout : Role::output,
                 s.rollback ? Fill::state : Fill::none});
  if (mtp && s.cache_intermediate && q8)
    t.push_back({"intermediate_scale", DType::f32, scales(rows), s.rollback ? Role::inout : Role::output,
                 s.rollback ? Fill::state_scale : Fill::none});
  return t;
}

WorkModel step_work(const Shape& s) {
  const bool mtp = s.op == OpKind::mtp;
  const double B = double(s.batch), T = mtp ? double(s.tokens) : 1.0;
  const double e = double(dtype_size(s.input_dtype)), st = double(dtype_size(s.state_dtype));
  // An 8-bit slot also moves its fp32 scales: 4 bytes per row of K codes (docs/method.md 5).
  const double row_scales = quant::is_8bit(s.state_dtype) ? 4.0 * double(s.h_v) * s.dv : 0.0;
  const double slot = state_elems_per_slot(s) * st + row_scales;
  WorkModel w;
  // Padding rows (index -1: every 8th row of the `padded` pattern) read and write no state, so
  // docs/method.md 5's 2 B HV K V s counts active rows only; their q, k, v, o still move.
  const double active = B - (s.indices == IndexPattern::padded ? double(s.batch / 8) : 0.0);
  w.bytes = B * T * (2.0 * s.h_qk * s.dk + double(s.h_v) * s.dv) * e + B * T * double(s.h_v) * s.dv * e +
            gate_bytes(s, B * T) + active * slot;
  if (!mtp || s.update_state) w.bytes += active * slot;
  if (mtp && s.cache_intermediate) w.bytes += B * T * slot;
  // Rollback: the starting state comes from the cache instead of the slot (same bytes) + accepted.
  if (mtp && s.rollback) w.bytes += 4.0 * B;
  w.flops = 6.0 * B * T * s.h_v * double(s.dk) * s.dv;
  w.flops_fi = w.flops;
  w.bandwidth_bound = true;
  return w;
}

std::vector<Tolerance> step_tolerances(const Shape& s) {
  // 8-bit pools compare with the quantized reference: rare one-code flips, bf16's threshold.
  const double t = s.state_dtype == DType::f32 ? 5e-3 : 1e-2;
  std::vector<Tolerance> out{{"o", t}, {"pool", t}};
  if (s.op == OpKind::mtp && s.cache_intermediate) out.push_back({"intermediate", t});
  return out;
}

std::string step_validate(const Shape& s) {
  if (auto r = validate_common(s); !r.empty()) return r;
  if (s.batch < 1) return fmt::format("batch must be >= 1 (got {})", s.batch);
  if (auto r = validate_state_format(s); !r.empty()) return r;
  if (s.index_dtype != DType::i64 && s.index_dtype != DType::i32)
    return fmt::format("index dtype must be i64 or i32 (got {})", to_string(s.index_dtype));
  if (s.pool_slots() < s.batch)
    return fmt::format("pool ({} slots) must hold at least one slot per row (batch {})", s.pool_slots(), s.batch);
  if (s.index_dtype == DType::i32 && s.pool_slots() > (int64_t(1) << 31) - 1) return "pool too large for int32 indices";
  if (s.op == OpKind::mtp && (s.tokens < 2 || s.tokens > 64))
    return fmt::format("mtp tokens T must be in 2..64 (got {})", s.tokens);
  if (s.op == OpKind::decode && (s.tokens != 1 || s.cache_intermediate || !s.update_state || s.rollback))
    return "decode has T = 1, no intermediate cache, update_state on and no rollback (use op mtp)";
  if (s.rollback && !s.cache_intermediate)
    return "rollback reads the previous step's intermediate cache: it needs cache_intermediate: true";
  return "";
}

// The engines' pool layout, [V, K] per head (FlashInfer "pretranspose").
Shape decode_default_shape() {
  Shape s;
  s.op = OpKind::decode;
  s.layout = Layout::vk;
  return s;
}

const OpDef kDecodeOp{OpKind::decode, "decode", "one token per row, state pool updated in place", step_tensors,
                      step_work, step_tolerances, step_validate, decode_default_shape};

namespace decode {
Args make_args(const Shape& s, const TensorSet& t) {
  Args a;
  a.B = s.batch, a.P = s.pool_slots(), a.T = s.op == OpKind::mtp ? s.tokens : 1;
  a.H = s.h_qk, a.HV = s.h_v, a.K = s.dk, a.V = s.dv;
  a.layout = s.layout, a.state_dtype = s.state_dtype, a.index_dtype = s.index_dtype;
  a.l2norm = s.l2norm;
  a.scale = float(s.effective_scale());
  a.update_state = s.op == OpKind::mtp ? s.update_state : true;
  a.q = t.ptr<const uint16_t>("q");
  a.k = t.ptr<const uint16_t>("k");
  a.v = t.ptr<const uint16_t>("v");
  a.gate = make_gate_args(s, t);
  a.pool = t.ptr<void>("pool");
  a.indices = t.ptr<const void>("indices");
  a.o = t.ptr<uint16_t>("o");
  a.intermediate = t.ptr<void>("intermediate");
  a.accepted = t.ptr<const int32_t>("accepted");
  a.pool_scale = t.ptr<float>("pool_scale");
  a.intermediate_scale = t.ptr<float>("intermediate_scale");
  return a;
}
}  // namespace decode

}  // namespace gdn

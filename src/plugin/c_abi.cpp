#include "plugin/c_abi.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>

#include "core/errors.h"
#include "core/state_quant.h"

namespace gdn {
namespace {

constexpr std::size_t kMessageBytes = 512;

int32_t c_dtype(DType d) {
  switch (d) {
    case DType::f32: return GDN_DTYPE_F32;
    case DType::bf16: return GDN_DTYPE_BF16;
    case DType::f16: return GDN_DTYPE_F16;
    case DType::i32: return GDN_DTYPE_I32;
    case DType::i64: return GDN_DTYPE_I64;
    case DType::fp8e4m3:
    case DType::i8: break;  // 8-bit pools never reach a plugin (supports refuses them)
  }
  return -1;
}

int32_t c_op(OpKind op) {
  switch (op) {
    case OpKind::prefill: return GDN_OP_PREFILL;
    case OpKind::decode: return GDN_OP_DECODE;
    case OpKind::mtp: return GDN_OP_MTP;
  }
  return -1;
}

// The output tensors an op's verification reads, the only names a tolerance may tighten.
std::vector<std::string> output_tensors(int32_t op) {
  if (op == GDN_OP_PREFILL) return {"o", "ht", "pool"};
  if (op == GDN_OP_MTP) return {"o", "pool", "intermediate"};
  return {"o", "pool"};
}

// A message the plugin wrote into a buffer: at most its size, even without a terminating NUL.
std::string message_of(const std::array<char, kMessageBytes>& buf) {
  std::size_t n = 0;
  while (n < buf.size() && buf[n] != '\0') ++n;
  return std::string(buf.data(), n);
}

}  // namespace

gdn_shape to_c_shape(const Shape& s) {
  gdn_shape c{};
  c.op = c_op(s.op);
  c.h_qk = s.h_qk, c.h_v = s.h_v, c.dk = s.dk, c.dv = s.dv;
  c.input_dtype = c_dtype(s.input_dtype);
  c.gate = s.gate == GateForm::log ? GDN_GATE_LOG : GDN_GATE_RAW;
  c.l2norm = s.l2norm;
  c.scale = float(s.effective_scale());
  c.layout = s.layout == Layout::vk ? GDN_LAYOUT_VK : GDN_LAYOUT_KV;
  c.state_dtype = c_dtype(s.state_dtype);
  c.index_dtype = c_dtype(s.index_dtype);
  if (s.op == OpKind::prefill) {
    c.pool_slots = s.prefill_pool() ? s.pool : 0;
    c.num_seqs = int64_t(s.seqlens.size());
    c.total_tokens = s.total_tokens();
    c.seqlens = s.seqlens.data();
    c.has_h0 = !s.prefill_pool() && s.has_h0;
    return c;
  }
  const bool mtp = s.op == OpKind::mtp;
  c.pool_slots = s.pool_slots();
  c.tokens = mtp ? s.tokens : 1;
  c.batch = s.batch;
  c.cache_intermediate = mtp && s.cache_intermediate;
  c.update_state = !mtp || s.update_state;
  c.rollback = mtp && s.rollback;
  return c;
}

gdn_args to_c_args(const gdn_shape& shape, const TensorSet& t, const LaunchContext& ctx, const int32_t* cu_host) {
  gdn_args a{};
  a.shape = &shape;
  a.q = t.ptr<const void>("q"), a.k = t.ptr<const void>("k"), a.v = t.ptr<const void>("v");
  a.g = t.ptr<const float>("g"), a.beta = t.ptr<const float>("beta");
  a.A_log = t.ptr<const float>("A_log"), a.a = t.ptr<const uint16_t>("a");
  a.dt_bias = t.ptr<const float>("dt_bias"), a.b = t.ptr<const uint16_t>("b");
  a.cu_seqlens = t.ptr<const int32_t>("cu_seqlens");
  a.cu_seqlens_host = a.cu_seqlens ? cu_host : nullptr;
  a.h0 = t.ptr<const float>("h0"), a.ht = t.ptr<float>("ht");
  a.pool = t.ptr<void>("pool"), a.indices = t.ptr<const void>("indices");
  a.intermediate = t.ptr<void>("intermediate"), a.accepted = t.ptr<const int32_t>("accepted");
  a.o = t.ptr<void>("o");
  a.num_threads = ctx.num_threads;
  a.sm_count = ctx.sm_count;
  return a;
}

std::string check_c_entry(const gdn_variant& e) {
  if (e.op < GDN_OP_PREFILL || e.op > GDN_OP_MTP) return fmt::format("op {} is not 0 (prefill), 1 (decode) or 2 (mtp)", e.op);
  if (e.backend != GDN_BACKEND_CPU && e.backend != GDN_BACKEND_CUDA)
    return fmt::format("backend {} is not 0 (cpu) or 1 (cuda)", e.backend);
  if (!e.launch) return "has no launch function";
  if (e.backend == GDN_BACKEND_CUDA && (e.min_arch < 0 || (e.max_arch != 0 && e.max_arch < e.min_arch)))
    return fmt::format("architecture range {}..{} is empty (max_arch 0 means no upper bound)", e.min_arch, e.max_arch);
  if (e.num_tolerances > 0 && !e.tolerances) return fmt::format("num_tolerances is {} but tolerances is NULL", e.num_tolerances);
  const auto outputs = output_tensors(e.op);
  for (uint32_t i = 0; i < e.num_tolerances; ++i) {
    const gdn_tolerance& t = e.tolerances[i];
    const std::string tensor = t.tensor ? t.tensor : "";
    if (std::find(outputs.begin(), outputs.end(), tensor) == outputs.end())
      return fmt::format("tolerances[{}] names tensor '{}', not an output of this op ({})", i, tensor,
                         fmt::join(outputs, ", "));
    if (!std::isfinite(t.rel_l2) || t.rel_l2 <= 0)
      return fmt::format("tolerances[{}] ('{}') is {}, not a positive relative L2 error", i, tensor, t.rel_l2);
  }
  return "";
}

Variant make_c_variant(const gdn_variant& e, const std::string& name, const VariantOrigin& origin) {
  Variant v;
  v.name = name;
  v.op = e.op == GDN_OP_PREFILL ? OpKind::prefill : e.op == GDN_OP_DECODE ? OpKind::decode : OpKind::mtp;
  v.backend = e.backend == GDN_BACKEND_CUDA ? Backend::cuda : Backend::cpu;
  if (v.backend == Backend::cuda) v.min_arch = e.min_arch, v.max_arch = e.max_arch == 0 ? 1000 : e.max_arch;
  v.description = e.description ? e.description : "";
  for (uint32_t i = 0; i < e.num_tolerances; ++i) v.tolerances.push_back({e.tolerances[i].tensor, e.tolerances[i].rel_l2});
  v.origin = origin;
  if (auto* supports = e.supports)
    v.supports = [supports](const Shape& s) -> std::string {
      const gdn_shape c = to_c_shape(s);
      std::array<char, kMessageBytes> reason{};
      if (supports(&c, reason.data(), reason.size())) return "";
      const std::string why = message_of(reason);
      return why.empty() ? "not supported by the plugin (it gave no reason)" : why;
    };
  // The C ABI carries no checkpoint tables and names no 8-bit state format: such points are
  // skipped with the reason, never run.
  v.supports = [inner = v.supports](const Shape& s) -> std::string {
    if (s.has_checkpoints()) return "prefill checkpoints (docs/method.md 2.4) are not part of the plugin ABI";
    if (quant::is_8bit(s.state_dtype))
      return fmt::format("the plugin ABI has no {} state format", to_string(s.state_dtype));
    return inner ? inner(s) : "";
  };
  const bool on_host = v.backend == Backend::cpu;
  v.launch = [launch = e.launch, name, on_host](const Shape& s, const TensorSet& t, const LaunchContext& ctx) {
    const gdn_shape c = to_c_shape(s);
    // On the host cu_seqlens is host memory already; for a device copy it is rebuilt from the shape.
    std::vector<int32_t> cu;
    if (!on_host && s.op == OpKind::prefill) {
      cu.push_back(0);
      for (auto len : s.seqlens) cu.push_back(cu.back() + int32_t(len));
    }
    const gdn_args a = to_c_args(c, t, ctx, on_host ? t.ptr<const int32_t>("cu_seqlens") : cu.data());
    std::array<char, kMessageBytes> error{};
    if (const int rc = launch(&a, on_host ? nullptr : ctx.stream, error.data(), error.size()); rc != 0) {
      const std::string why = message_of(error);
      throw runtime_error(fmt::format("{}: launch returned {}{}", name, rc, why.empty() ? "" : ": " + why));
    }
  };
  return v;
}

}  // namespace gdn

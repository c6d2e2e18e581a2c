#include "step/plan.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/plan_spec.h"
#include "core/state_quant.h"

namespace gdn::step {

std::string_view to_string(Kernel k) {
  switch (k) {
    case Kernel::decode_vk: return "decode_vk";
    case Kernel::decode_kv: return "decode_kv";
    case Kernel::tokens_vk: return "tokens_vk";
    case Kernel::tokens_kv: return "tokens_kv";
    case Kernel::read_only_vk: return "read_only_vk";
    case Kernel::mma: return "mma";
    case Kernel::mma_pipelined: return "mma_pipelined";
  }
  return "?";
}

std::string_view to_string(MmaForm f) {
  switch (f) {
    case MmaForm::none: return "none";
    case MmaForm::bf16: return "bf16";
    case MmaForm::tf32: return "tf32";
  }
  return "?";
}

Call Call::of(const Shape& s) {
  const bool mtp = s.op == OpKind::mtp;
  Call c;
  c.B = s.batch, c.HV = s.h_v, c.K = s.dk, c.V = s.dv, c.T = mtp ? s.tokens : 1;
  c.layout = s.layout, c.state_dtype = s.state_dtype;
  c.update_state = !mtp || s.update_state;
  c.cache = mtp && s.cache_intermediate;
  return c;
}

namespace {

bool is_mma(Kernel k) { return k == Kernel::mma || k == Kernel::mma_pipelined; }
int64_t pairs(const Call& a) { return a.B * a.HV; }

// What the tensor-core kernels take: vk, K = 128, V % 16 == 0, T <= 64, no intermediate cache.
bool mma_supported(const Call& a) {
  return a.layout == Layout::vk && a.K == kHeadK && a.V % 16 == 0 && a.T >= 1 && a.T <= 64 &&
         !a.cache && (a.state_dtype == DType::f32 || a.state_dtype == DType::bf16);
}

// 8-bit pools: the tensor-core build (mtp_mma_8bit.cuh) takes vk update calls of 2 or more
// tokens without the cache (decode has its own 8-bit kernel).
bool mma_8bit_supported(const Call& a) {
  return quant::is_8bit(a.state_dtype) && a.layout == Layout::vk && a.K == kHeadK && a.V % 16 == 0 && a.T >= 2 &&
         a.T <= 64 && !a.cache && a.update_state;
}

// 8-bit update calls from kMma8bitMinTokens tokens on tensor cores: 0.84-0.88x tokens_vk's time
// at T = 3 and 0.76-0.79x at T = 4 (H200, B = 64 and 256, fp8e4m3 and int8, 34af109). T = 2 is
// not measured; the static count (sm_90a SASS, docs/state-8bit.md, 64 state values a lane in both
// kernels) calls it a tie: tokens_vk's 8-bit token loop is about 413 instructions a lane per token
// (194 FFMA: two dots and the update), the tensor-core build's chunk of up to 4 tokens about 789
// (32 HMMA, the recurrence), its first chunk on exact codes, so T = 2 (826 vs 789) stays on
// tokens_vk; from T = 3 (1239 vs 789) the chunk kernel issues fewer instructions.
bool uses_mma_8bit(const Call& a) { return mma_8bit_supported(a) && a.T >= kMma8bitMinTokens; }

// Read-only calls from 5 tokens on, with an fp32 pool and the pipelined kernel's batch sizes:
// the tensor-core READ_ONLY builds (H200, 7b5468d: T = 5 B = 32 / 256 29.9 / 180.3 us against
// 35.1 / 233.0 on the T-token kernel).
bool read_only_mma(const Call& a) {
  return !a.update_state && !a.cache && a.T > kGramTokens && a.state_dtype == DType::f32 &&
         pairs(a) >= kMmaPipelinedMinHeads;
}

// Tile depth of the CUDA-core kernels (a depth sweep per size on an H200 with the shipped access
// policy, e3d105d).
int cuda_core_depth(const Call& a) {
  const int64_t heads = pairs(a);
  const bool bf16 = a.state_dtype == DType::bf16;
  if (a.layout == Layout::kv) {
    if (uses_decode_kernel(a)) return heads <= 64 ? 2 : 4;  // bf16 decode_kv
    return bf16 || heads <= 32 ? 2 : 4;
  }
  if (uses_decode_kernel(a)) {
    // 8-bit pools: the bytes per warp of the bf16 choice (a code row is half a bf16 row), unmeasured.
    if (quant::is_8bit(a.state_dtype)) return heads <= 128 ? 4 : kDecode8bitDeepDepth;
    if (bf16) return heads <= 128 ? 2 : 4;
    return heads <= 32 ? 1 : heads <= 128 ? 2 : 4;
  }
  if (heads > 256) return 4;
  return !bf16 && heads <= 32 ? 1 : 2;
}

// read_only_vk at depth 4: four tiles per warp where V allows, two where V is a multiple of 32
// only (H200, e31ce7a: fp32 two / four / eight 155.8 / 145.8 / 145.5 us at T = 4 B = 256).
int read_only_tiles(const Call& a, int depth) {
  if (depth != 4) return 1;
  if (a.V % (16 * 4) == 0) return 4;
  if (a.V % (16 * 2) == 0) return 2;
  return 1;
}

}  // namespace

// Single-token calls without a cache take the decode kernels, except fp32 kv, where
// step_kv_kernel is as fast.
bool uses_decode_kernel(const Call& a) {
  return a.T == 1 && !a.cache && (a.layout == Layout::vk || a.state_dtype == DType::bf16);
}

bool read_only_call(const Call& a) { return !a.update_state && a.T <= kMmaChunk; }

bool uses_read_only_kernel(const Call& a) {
  return a.layout == Layout::vk && !a.update_state && !a.cache && a.T <= kGramTokens &&
         !quant::is_8bit(a.state_dtype);  // 8-bit read-only calls run tokens_vk
}

// From 8 tokens on (vk, no cache) the tensor-core kernels win (H200, B = 128: T = 8 162 vs 188
// us); fp32 pools from 6 tokens (e821911: T = 7 at every B, T = 6 at B <= 4 and
// B >= 64 but not in between, hence kMmaT6MinHeads); T = 5 fp32 below kMmaPipelinedMinHeads pairs
// on the plain kernel (3b0359f: B = 1 / 2 / 4 5.38 / 6.49 / 8.93 vs 5.86 / 6.75 / 9.06 us).
bool uses_mma(const Call& a) {
  if (quant::is_8bit(a.state_dtype)) return uses_mma_8bit(a);
  if (!mma_supported(a)) return false;
  if (read_only_mma(a)) return true;
  if (a.T >= kMmaMinTokens) return true;
  const int64_t heads = pairs(a);
  if (a.state_dtype == DType::f32 && a.T == 5) return heads < kMmaPipelinedMinHeads;
  if (a.state_dtype != DType::f32 || a.T < kMmaFp32MinTokens) return false;
  return a.T > 6 || heads < kMmaPipelinedMinHeads || heads >= kMmaT6MinHeads;
}

// Pipelined for fp32 pools from kMmaPipelinedMinHeads pairs up to 8 tokens (bf16 pools spill in
// it: 182 vs 153 us at T = 8); T = 8 update calls from kMmaPlainFromHeads pairs take the plain kernel.
bool uses_pipelined_mma(const Call& a) {
  const int64_t heads = pairs(a);
  return a.T <= kMmaPipelinedMaxTokens && a.state_dtype == DType::f32 && heads >= kMmaPipelinedMinHeads &&
         (a.T < kMmaPipelinedMaxTokens || heads < kMmaPlainFromHeads || read_only_call(a));
}

Plan mma_plan(const Call& a) {
  Plan p;
  p.read_only = read_only_call(a);
  p.form = MmaForm::bf16;
  if (uses_pipelined_mma(a)) {
    p.kernel = Kernel::mma_pipelined;
    if (!p.read_only && pairs(a) >= kMmaTf32FromHeads) p.form = MmaForm::tf32;
  } else {
    p.kernel = Kernel::mma;
  }
  return p;
}

Plan cuda_core_plan(const Call& a, int depth) {
  Plan p;
  p.depth = depth;
  if (uses_decode_kernel(a)) {
    p.kernel = a.layout == Layout::kv ? Kernel::decode_kv : Kernel::decode_vk;
  } else if (a.layout == Layout::kv) {
    p.kernel = Kernel::tokens_kv;
  } else if (uses_read_only_kernel(a)) {
    p.kernel = Kernel::read_only_vk;
    p.tiles = read_only_tiles(a, p.depth);
  } else {
    p.kernel = Kernel::tokens_vk;
  }
  return p;
}

Plan choose(const Call& a) { return uses_mma(a) ? mma_plan(a) : cuda_core_plan(a, cuda_core_depth(a)); }

int Plan::block_warps() const {
  switch (kernel) {
    case Kernel::decode_vk:
    case Kernel::decode_kv:
    case Kernel::tokens_kv: return kBlockWarps;
    case Kernel::mma:
    case Kernel::tokens_vk:
    case Kernel::read_only_vk:
    case Kernel::mma_pipelined: return 1;
  }
  return 1;
}

int Plan::min_warps(DType state) const {
  const bool bf16 = state == DType::bf16;
  switch (kernel) {
    case Kernel::decode_vk:
      if (quant::is_8bit(state)) return decode_vk_8bit_min_warps(depth);
      return decode_vk_min_warps(state != DType::f32, depth);  // bf16: 20
    case Kernel::decode_kv: return kDecodeKvMinWarps;
    case Kernel::tokens_vk: return quant::is_8bit(state) ? tokens_vk_8bit_min_warps(depth) : kTokensVkMinWarps;
    case Kernel::tokens_kv: return kNoMinWarps;
    case Kernel::read_only_vk: return read_only_min_warps(bf16);
    case Kernel::mma: return kMmaMinWarps;
    case Kernel::mma_pipelined: return kMmaPipelinedMinWarps;
  }
  return kNoMinWarps;
}

std::string Plan::describe(DType state) const {
  std::string s{to_string(kernel)};
  if (depth > 0) s += fmt::format(" depth={}", depth);
  if (kernel == Kernel::read_only_vk) s += fmt::format(" tiles={}", tiles);
  if (is_mma(kernel)) s += fmt::format(" form={}{}", to_string(form), read_only ? " read_only" : "");
  const int w = min_warps(state);
  const std::string budget =
      w > 0 ? fmt::format("{} warps/SM, <= {} registers", w, register_budget(w)) : "<= 255 registers";
  return s + fmt::format(" ({} warp{}/block, {})", block_warps(), block_warps() > 1 ? "s" : "", budget);
}

std::string check(const Plan& p, const Call& a) {
  const bool bf16 = a.state_dtype == DType::bf16;
  const bool vk = a.layout == Layout::vk;
  if (quant::is_8bit(a.state_dtype) && p.kernel == Kernel::mma) {
    if (!mma_8bit_supported(a)) return "the 8-bit tensor-core build takes vk update calls of 2 or more tokens without the cache only";
    if (p.read_only) return "the 8-bit tensor-core build has no read_only form";
    if (p.form != MmaForm::bf16) return "the 8-bit tensor-core build is built with bf16 MMAs only";
    if (p.depth != 0 || p.tiles != 1) return "the tensor-core kernels have no depth or tiles";
    return "";
  }
  if (quant::is_8bit(a.state_dtype) && p.kernel != Kernel::decode_vk && p.kernel != Kernel::tokens_vk)
    return "8-bit pools run on decode_vk (decode), tokens_vk and mma (mtp) only";
  if (is_mma(p.kernel)) {
    if (!mma_supported(a)) return "the tensor-core kernels take vk calls without the cache only";
    if (p.depth != 0 || p.tiles != 1) return "the tensor-core kernels have no depth or tiles";
    if (p.read_only != read_only_call(a))
      return p.read_only ? "read_only builds skip the state update this call needs"
                         : "this call is read-only (update off, T <= 8): it needs the read_only build";
    if (p.form == MmaForm::none) return "a tensor-core kernel needs form=bf16 or form=tf32";
    if (p.kernel == Kernel::mma_pipelined) {
      if (bf16) return "the pipelined kernel takes fp32 pools only (bf16 spills in it)";
      if (p.form == MmaForm::tf32 && p.read_only) return "tf32 is built for the pipelined update build only";
    } else if (p.form == MmaForm::tf32) {
      return "the plain tensor-core kernel is built with bf16 MMAs only";
    }
    return "";
  }
  if (p.form != MmaForm::none || p.read_only) return "form and read_only belong to the tensor-core kernels";
  if (p.tiles != 1 && p.kernel != Kernel::read_only_vk) return "tiles belong to read_only_vk";
  switch (p.kernel) {
    case Kernel::decode_vk:
      if (!vk || !uses_decode_kernel(a)) return "decode_vk takes single-token vk calls without a cache";
      if (p.depth == kDecode8bitDeepDepth && quant::is_8bit(a.state_dtype)) break;
      if (p.depth != 1 && p.depth != 2 && p.depth != 4) return "decode_vk depth must be 1, 2 or 4 (8 for 8-bit pools)";
      break;
    case Kernel::decode_kv:
      if (vk || !bf16 || !uses_decode_kernel(a)) return "decode_kv takes single-token bf16 kv calls without a cache";
      if (p.depth != 2 && p.depth != 4) return "decode_kv depth must be 2 or 4";
      break;
    case Kernel::tokens_vk:
      if (!vk) return "tokens_vk takes vk calls";
      if (p.depth != 1 && p.depth != 2 && p.depth != 4) return "tokens_vk depth must be 1, 2 or 4";
      break;
    case Kernel::tokens_kv:
      if (vk) return "tokens_kv takes kv calls";
      if (p.depth != 2 && (p.depth != 4 || bf16)) return "tokens_kv depth must be 2 or 4 (2 for bf16 pools)";
      break;
    case Kernel::read_only_vk:
      if (!uses_read_only_kernel(a)) return "read_only_vk takes vk calls with update off, no cache, T <= 4";
      if (p.depth != 1 && p.depth != 2 && p.depth != 4) return "read_only_vk depth must be 1, 2 or 4";
      if (p.tiles != 1 && (p.depth != 4 || (p.tiles != 2 && p.tiles != 4))) return "tiles 2 or 4 need depth 4";
      break;
    default: break;
  }
  const int rows = p.kernel == Kernel::read_only_vk ? 4 * p.depth * p.tiles : 4 * p.depth;
  if (vk && a.V % rows != 0) return fmt::format("V = {} is not a multiple of the {} rows a warp covers", a.V, rows);
  return "";
}

const std::vector<PlanKnob>& knobs() {
  static const std::vector<PlanKnob> table{
      {"kernel",
       {"decode_vk", "decode_kv", "tokens_vk", "tokens_kv", "read_only_vk", "mma", "mma_pipelined"},
       "the kernel; knobs not set follow it (what the routing gives that kernel for the call)"},
      {"depth",
       {"1", "2", "4", "8"},
       "CUDA-core kernels: vk rows per lane per load (8: decode_vk on 8-bit pools), or kv lanes per K row"},
      {"tiles", {"1", "2", "4"}, "read_only_vk: tiles per warp (2 and 4 at depth 4)"},
      {"form", {"bf16", "tf32"}, "tensor-core kernels: bf16 MMAs on a two-half state, or TF32"},
      {"read_only", {"0", "1"}, "tensor-core kernels: the build without the state update"},
  };
  return table;
}

std::string check_spec(const std::string& spec) { return check_plan_knobs(knobs(), spec); }

Plan apply_override(const Plan& chosen, std::string_view spec, const Call& a) {
  if (const std::string why = check_plan_knobs(knobs(), spec); !why.empty())
    throw std::invalid_argument(fmt::format("plan '{}': {}", spec, why));
  Plan p = chosen;
  bool has_depth = false, has_tiles = false, has_form = false, has_read_only = false;
  for (const auto& [knob, value] : parse_plan_spec(spec)) {  // names and values checked above
    if (knob == "kernel") {
      for (Kernel k : {Kernel::decode_vk, Kernel::decode_kv, Kernel::tokens_vk, Kernel::tokens_kv,
                       Kernel::read_only_vk, Kernel::mma, Kernel::mma_pipelined})
        if (to_string(k) == value) p.kernel = k;
    } else if (knob == "form") {
      p.form = value == "tf32" ? MmaForm::tf32 : MmaForm::bf16, has_form = true;
    } else if (knob == "depth") {
      p.depth = std::stoi(value), has_depth = true;
    } else if (knob == "tiles") {
      p.tiles = std::stoi(value), has_tiles = true;
    } else if (knob == "read_only") {
      p.read_only = value == "1", has_read_only = true;
    }
  }
  // Fields not named follow a changed kernel: what choose() would give it for this call.
  if (p.kernel != chosen.kernel) {
    const Plan base = is_mma(p.kernel) ? mma_plan(a) : cuda_core_plan(a, has_depth ? p.depth : cuda_core_depth(a));
    if (!has_depth) p.depth = base.depth;
    if (!has_form) p.form = base.form;
    if (!has_read_only) p.read_only = base.read_only;
    if (!has_tiles) p.tiles = p.kernel == Kernel::read_only_vk ? read_only_tiles(a, p.depth) : 1;
  }
  return p;
}

Plan plan_for(const Call& a, std::string_view spec) {
  Plan p = choose(a);
  if (spec.empty()) return p;
  p = apply_override(p, spec, a);
  if (const std::string why = check(p, a); !why.empty())
    throw std::invalid_argument(fmt::format("plan '{}': {}", spec, why));
  return p;
}

}  // namespace gdn::step

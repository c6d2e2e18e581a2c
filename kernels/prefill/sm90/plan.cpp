#include "prefill/sm90/plan.h"

#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>

namespace gdn::sm90 {

Batch Batch::of(const Shape& s) {
  Batch b;
  b.sequences = int64_t(s.seqlens.size());
  b.HV = s.h_v, b.K = s.dk, b.V = s.dv;
  return b;
}

std::string Plan::describe(const Batch& b, int sm_count) const {
  const std::string roles = kernel == kKernelV2 ? fmt::format(", {} prepare the next chunk", kPrepWarps) : "";
  const char* how = kernel == kKernelV2 ? "kernel v2: warp-specialised, the chunk's preparation one chunk ahead"
                                        : "kernel v1: the chunk's phases in series";
  return fmt::format("chunk {}, block_v {} ({} warps, {} own the state{}), {} CTAs on {} SMs, {:.1f} KiB smem, "
                     "{}, mma.sync bf16/f16 operands, fp32 state in registers",
                     kChunk, block_v, warps(), state_warps(), roles, ctas(b), sm_count, smem_bytes() / 1024.0, how);
}

std::string unsupported_reason(const Shape& s) {
  if (s.input_dtype != DType::bf16 && s.input_dtype != DType::f16)
    return fmt::format("inputs must be bf16 or f16 (got {})", to_string(s.input_dtype));
  if (s.dk != kHeadDim || s.dv != kHeadDim)
    return fmt::format("head sizes K = V = 128 only so far (got K = {}, V = {}; 64 and 256 are next)", s.dk, s.dv);
  if (s.seqlens.empty()) return "no sequences";
  // The grid is one-dimensional: V-blocks x value heads x sequences at the smallest block_v.
  const int64_t most_ctas = int64_t(kHeadDim / 32) * s.h_v * int64_t(s.seqlens.size());
  if (most_ctas > (int64_t(1) << 31) - 1) return fmt::format("too many (sequence, head) pairs for one grid ({})", most_ctas);
  return "";
}

Plan choose(const Batch& b, int sm_count, int kernel) {
  if (sm_count < 1) sm_count = kDefaultSmCount;
  Plan p;
  p.kernel = kernel;
  const int largest = kernel == kKernelV2 ? 64 : 128;
  for (int bv : {32, 64, 128}) {
    if (bv > largest) break;
    p.block_v = bv;
    if (p.ctas(b) <= sm_count) return p;
  }
  p.block_v = largest;
  return p;
}

Plan choose(const Batch& b, int sm_count) {
  const Plan v2 = choose(b, sm_count, kKernelV2);
  return v2.ctas(b) <= (sm_count < 1 ? kDefaultSmCount : sm_count) ? v2 : choose(b, sm_count, kKernelV1);
}

Override parse_override(std::string_view spec) {
  auto bad = [&](std::string_view why) {
    return std::invalid_argument(fmt::format(
        "sm90 plan override '{}': {} (expected block_v=32|64|128 and/or kernel=v1|v2, comma-separated)", spec, why));
  };
  Override o;
  for (size_t at = 0; !spec.empty() && at != std::string_view::npos;) {  // every field, empty ones too
    const size_t comma = spec.find(',', at);
    const std::string_view field = spec.substr(at, comma == std::string_view::npos ? comma : comma - at);
    at = comma == std::string_view::npos ? comma : comma + 1;
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos) throw bad(fmt::format("'{}' is not key=value", field));
    const std::string_view key = field.substr(0, eq), value = field.substr(eq + 1);
    if (key == "block_v") {
      if (value == "32") o.block_v = 32;
      else if (value == "64") o.block_v = 64;
      else if (value == "128") o.block_v = 128;
      else throw bad("block_v must be 32, 64 or 128");
    } else if (key == "kernel") {
      if (value == "v1") o.kernel = kKernelV1;
      else if (value == "v2") o.kernel = kKernelV2;
      else throw bad("kernel must be v1 or v2");
    } else {
      throw bad(fmt::format("unknown key '{}'", key));
    }
  }
  return o;
}

namespace {
Plan checked(const Plan& p, std::string_view spec) {
  if (p.kernel == kKernelV2 && p.block_v == 128)
    throw std::invalid_argument(fmt::format("sm90 plan override '{}': kernel v2 has block_v 32 or 64", spec));
  return p;
}
}  // namespace

Plan apply_override(const Plan& chosen, std::string_view spec) {
  const Override o = parse_override(spec);
  Plan p = chosen;
  if (o.kernel != 0) p.kernel = o.kernel;
  if (o.block_v != 0) p.block_v = o.block_v;
  return checked(p, spec);
}

Plan plan_for(const Batch& b, int sm_count) {
  const char* spec = std::getenv("GDNBENCH_SM90_PLAN");
  if (spec == nullptr || *spec == '\0') return choose(b, sm_count);
  const Override o = parse_override(spec);
  Plan p = o.kernel != 0 ? choose(b, sm_count, o.kernel) : choose(b, sm_count);
  if (o.block_v != 0) p.block_v = o.block_v;
  return checked(p, spec);
}

}  // namespace gdn::sm90

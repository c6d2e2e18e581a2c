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
  return fmt::format("chunk {}, block_v {} ({} warps, {} own the state), {} CTAs on {} SMs, {:.1f} KiB smem, "
                     "mma.sync bf16/f16 operands, fp32 state in registers",
                     kChunk, block_v, warps(), state_warps(), ctas(b), sm_count, smem_bytes() / 1024.0);
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

Plan choose(const Batch& b, int sm_count) {
  if (sm_count < 1) sm_count = kDefaultSmCount;
  Plan p;
  for (int bv : {32, 64, 128}) {
    p.block_v = bv;
    if (p.ctas(b) <= sm_count) return p;
  }
  p.block_v = 128;
  return p;
}

Plan apply_override(const Plan& chosen, std::string_view spec) {
  Plan p = chosen;
  if (spec.empty()) return p;
  constexpr std::string_view kKey = "block_v=";
  if (spec.substr(0, kKey.size()) != kKey)
    throw std::invalid_argument(fmt::format("sm90 plan override '{}': expected block_v=32|64|128", spec));
  const std::string_view value = spec.substr(kKey.size());
  if (value == "32") p.block_v = 32;
  else if (value == "64") p.block_v = 64;
  else if (value == "128") p.block_v = 128;
  else throw std::invalid_argument(fmt::format("sm90 plan override '{}': block_v must be 32, 64 or 128", spec));
  return p;
}

Plan plan_for(const Batch& b, int sm_count) {
  Plan p = choose(b, sm_count);
  if (const char* spec = std::getenv("GDNBENCH_SM90_PLAN"); spec != nullptr && *spec != '\0') p = apply_override(p, spec);
  return p;
}

}  // namespace gdn::sm90

#include "core/state_format.h"

#include <fmt/format.h>

#include "core/state_quant.h"

namespace gdn {

std::string validate_state_format(const Shape& s) {
  const DType d = s.state_dtype;
  if (d == DType::f32 || d == DType::bf16) return "";
  const bool pooled = s.op != OpKind::prefill || s.prefill_pool();  // prefill's dense form has no pool
  if (!quant::is_8bit(d))
    return pooled ? fmt::format("state dtype must be f32, bf16, fp8e4m3 or int8 (got {})", to_string(d)) : "";
  if (!pooled)
    return fmt::format("state dtype {} is a pool format: prefill needs the pool form (pool > 0)", to_string(d));
  // One fp32 scale covers one K-contiguous row (value row v of a head): the vk layout.
  if (s.layout != Layout::vk)
    return fmt::format("state dtype {} keeps one scale per row of K values: it needs layout vk", to_string(d));
  return "";
}

std::string unsupported_8bit_state(const Shape& s) {
  return quant::is_8bit(s.state_dtype) ? fmt::format("no {} state pools in this variant", to_string(s.state_dtype))
                                       : std::string();
}

}  // namespace gdn

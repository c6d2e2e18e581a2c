// 8-bit pool rows (docs/method.md 2.5) <-> the fp32 working rows of the CPU step: each row of K
// codes is widened with its scale on load and re-quantized with a fresh scale on store, through
// the host quantizer the reference uses (core/state_quant.h).
#pragma once

#include <cstdint>

#include "core/state_quant.h"

namespace gdn::cpu {

// rows x K codes at `codes` (K apart) with their scales -> rows x K floats.
inline void load_rows_8bit(DType d, const void* codes, const float* scales, int rows, int K, float* dst) {
  const auto* c = static_cast<const uint8_t*>(codes);
  for (int r = 0; r < rows; ++r) quant::dequantize_row(d, c + int64_t(r) * K, scales[r], K, dst + int64_t(r) * K);
}

// rows x K floats -> their codes and one new scale per row.
inline void store_rows_8bit(DType d, const float* src, int rows, int K, void* codes, float* scales) {
  auto* c = static_cast<uint8_t*>(codes);
  for (int r = 0; r < rows; ++r) scales[r] = quant::quantize_row(d, src + int64_t(r) * K, K, c + int64_t(r) * K);
}

}  // namespace gdn::cpu

// The drift of an 8-bit state pool (docs/state-8bit.md): a fresh sequence decoded token by token
// from a zero state, once with the state stored quantized after every token (what decode with an
// 8-bit pool does) and once in fp32, on the point's input distribution, compared at a few lengths.
// Host only, fp32, a few value heads and rows: seconds, whatever the point's batch.
#pragma once

#include <cstdint>
#include <vector>

#include "core/shape.h"
#include "core/state_drift.h"

namespace gdn {

struct DriftOptions {
  int heads = 4;          // value heads of the sampled shape: ceil(3/4) of them decay (standard inputs)
  int rows_per_head = 8;  // value rows followed per head (rows of vk are independent)
  std::vector<int64_t> lengths{4096, 32768, 131072};
  int64_t o_window = 1024;  // outputs compared over the last o_window tokens before each length
  int threads = 0;
  bool stochastic = false;  // every store rounded stochastically (quant::quantize_row_stochastic), not to nearest
};

// For a point whose state_dtype is fp8e4m3 or int8 (throws otherwise). Deterministic in `seed`.
StateDrift estimate_drift(const Shape& s, uint64_t seed, const DriftOptions& opt = {});

// estimate_drift with the default options, computed once per (format, K, inputs, seed) in a run:
// the drift does not depend on the batch, the pool or the variant.
StateDrift cached_drift(const Shape& s, uint64_t seed);

}  // namespace gdn

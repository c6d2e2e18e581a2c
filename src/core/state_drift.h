// How far an 8-bit pool's quantized recurrence drifts from the fp32 one (docs/state-8bit.md):
// measured on the host for a point with an 8-bit state_dtype, stored in its record, shown in the
// table.
#pragma once

#include <cstdint>
#include <vector>

namespace gdn {

struct StateDrift {
  int heads = 0;                     // value heads sampled (the point's input distribution)
  int rows = 0;                      // value rows (of K) followed, over all those heads
  std::vector<int64_t> tokens;       // run lengths measured: 4096, 32768, 131072
  std::vector<double> state_rel_l2;  // ||S_q - S|| / ||S|| after that many tokens, per length
  std::vector<double> o_rel_l2;      // ||o_q - o|| / ||o|| over the last 1024 of those tokens
  bool empty() const { return tokens.empty(); }
};

}  // namespace gdn

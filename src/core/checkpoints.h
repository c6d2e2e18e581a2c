// Prefill state checkpoints (docs/method.md 2.4): the token positions inside each sequence after
// which the state is saved into a pool slot, as one shape describes them. One definition for the
// op contract, the input generator, the reference, the CPU variant's tests and the verifier.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/shape.h"

namespace gdn {

// Positions are counted from each sequence's start and are multiples of this.
constexpr int64_t kCheckpointGranule = 64;

// Positions of sequence n's checkpoints, increasing: every C tokens up to and including its
// length, or its explicit list. Empty without checkpoints.
std::vector<int64_t> checkpoint_positions(const Shape& s, int64_t n);
// Columns J of the checkpoint_indices table [N, J]: the most checkpoints any sequence has.
int64_t checkpoint_columns(const Shape& s);
// Whether entry n * J + j of the table is -1 although sequence n has a checkpoint j: the `padded`
// index pattern skips every 8th entry (entry % 8 == 5), so -1 entries are exercised.
inline bool checkpoint_skipped(const Shape& s, int64_t entry) {
  return s.indices == IndexPattern::padded && entry % 8 == 5;
}
// Checkpoints written (table entries that name a slot), for the byte model.
int64_t checkpoints_written(const Shape& s);

// "" when the checkpoint axes of s are consistent, else the reason.
std::string validate_checkpoints(const Shape& s);

// The explicit form's text, "at:P+P/P/" (one group per sequence, '/' between groups, '+' between
// positions) and back. A single group applies to every sequence (positions past a sequence's
// length are dropped there); parse returns the groups as written and throws std::invalid_argument.
std::string checkpoint_at_text(const std::vector<std::vector<int64_t>>& table);
std::vector<std::vector<int64_t>> parse_checkpoint_at(const std::string& text);
// A single group spread over the sequences of `seqlens` (several groups are returned as given).
std::vector<std::vector<int64_t>> spread_checkpoint_at(const std::vector<std::vector<int64_t>>& groups,
                                                       const std::vector<int64_t>& seqlens);

}  // namespace gdn

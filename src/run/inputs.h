// Seeded input generation (docs/method.md 3) and output poisoning. Values are a pure function of
// (seed, tensor name, element index), so any sub-range can be regenerated later (for example to
// check untouched pool slots bit for bit without keeping a copy).
#pragma once

#include <cstdint>
#include <vector>

#include "core/shape.h"
#include "core/tensor.h"

namespace gdn {

// Fills host memory `dst` (numel elements of spec.dtype) per spec.fill.
void fill_input(const Shape& s, const TensorSpec& spec, void* dst, uint64_t seed, int threads = 0);
// Elements [begin, end) only (same values as the full fill).
void fill_input_range(const Shape& s, const TensorSpec& spec, void* dst, uint64_t seed, int64_t begin, int64_t end);
// Elements [begin, end) of a float input (q, k, v, a gate tensor), element i written to
// dst[i - begin]: a window of a tensor too large to hold whole (the drift estimate's long runs).
void fill_input_window(const Shape& s, const TensorSpec& spec, void* dst, uint64_t seed, int64_t begin, int64_t end);
// The pool slot of every decode/mtp row (-1 = padding), per Shape::indices.
std::vector<int64_t> make_indices(const Shape& s, uint64_t seed);
// The checkpoint_indices table [N, J] (docs/method.md 2.4): every checkpoint gets its own slot
// among those indices[] leaves free (ascending for the identity pattern, descending from the top
// for `high`, a seeded shuffle otherwise); -1 past a sequence's checkpoints and where
// checkpoint_skipped says so.
std::vector<int64_t> make_checkpoint_indices(const Shape& s, uint64_t seed);
// Writes the NaN poison pattern over every element of a float tensor.
void poison(const TensorSpec& spec, void* dst);
// True when element i still holds the poison pattern.
bool is_poison(const TensorSpec& spec, const void* data, int64_t i);

}  // namespace gdn

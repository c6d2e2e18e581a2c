// Which state formats a shape may name (docs/method.md 2.5): f32 and bf16 everywhere; the 8-bit
// formats fp8e4m3 and int8 only in a pool (decode, mtp, the prefill pool form) with the vk layout.
#pragma once

#include <string>

#include "core/shape.h"

namespace gdn {

// "" when the shape's state_dtype and layout form a state format its op accepts, else why not.
std::string validate_state_format(const Shape& s);

// The reason a variant that runs only f32 and bf16 states gives for an 8-bit pool; "" otherwise.
std::string unsupported_8bit_state(const Shape& s);

}  // namespace gdn

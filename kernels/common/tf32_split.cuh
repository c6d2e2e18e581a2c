// fp32 as two TF32 operands for the three-product form a b ~ a_big b_big + a_big b_rest +
// a_rest b_big: big = x truncated to TF32 and rest = x - big (exact in fp32; the MMA truncates
// it again), 2^-20 |x| together, with fp32's range. Used where an MMA must keep fp32 accuracy.
#pragma once

#include <cstdint>

namespace gdn {
namespace dev {

__device__ __forceinline__ void split_tf32(float x, uint32_t& big, uint32_t& rest) {
  big = __float_as_uint(x) & 0xffffe000u;
  rest = __float_as_uint(x - __uint_as_float(big));
}

}  // namespace dev
}  // namespace gdn

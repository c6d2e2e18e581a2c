// ex2.approx.ftz.f32: 2^x on the SFU, results below 2^-126 flushed to zero. __expf compiles to the
// non-ftz ex2.approx, which wraps every call in a rescaling branch for subnormal results; decay
// factors that small are zero for every use we make of them.
#pragma once

namespace gdn {
namespace ptx {

__device__ __forceinline__ float ex2_approx_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace ptx
}  // namespace gdn

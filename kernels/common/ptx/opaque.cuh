// A value the compiler must treat as unknown at this point (an empty asm that "changes" it): code
// computed from it cannot be hoisted above it. A loop that re-derives addresses from an opaque
// copy per iteration keeps them out of the registers it would otherwise hold (and spill) across
// the whole loop. No instruction is emitted.
#pragma once

namespace gdn {
namespace ptx {

__device__ __forceinline__ int opaque(int x) {
  asm volatile("" : "+r"(x));
  return x;
}

}  // namespace ptx
}  // namespace gdn

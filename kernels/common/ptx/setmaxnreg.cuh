// Register reallocation between warpgroups (setmaxnreg, sm_90a): a warpgroup gives registers
// back (dec) so that others can take more (inc) than the launch's per-thread count; the kernel is
// launched with the average. Every thread of the warpgroup executes it (.sync.aligned); N is a
// multiple of 8 in [24, 256]. The CCCL of CUDA 13.0 has no wrapper for it, hence inline PTX.
#pragma once

namespace gdn {
namespace ptx {

template <int N> __device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}

template <int N> __device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}

}  // namespace ptx
}  // namespace gdn

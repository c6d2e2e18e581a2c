// Programmatic dependent launch (griddepcontrol, sm_90+): a kernel launched as a programmatic
// dependent of the one before it may start its CTAs early and wait for that one's results.
// Compiled for an earlier architecture both are no-ops: there no kernel launches that way, so
// every kernel starts after the one before it has finished.
#pragma once

#include <cuda_runtime.h>

namespace gdn {
namespace ptx {

// The kernels after this one may start their CTAs.
__device__ __forceinline__ void pdl_trigger() {
#if __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}

// Waits for the kernel before this one (returns at once when it was not launched as a dependent).
__device__ __forceinline__ void pdl_wait() {
#if __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
#endif
}

}  // namespace ptx
}  // namespace gdn

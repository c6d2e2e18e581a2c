// An attribute of the current CUDA device, for a variant's planning (its SM count, the shared memory
// a block may have), or 0 when there is none: planning on a CPU host goes on with the family's
// defaults. Header-only (CUDA runtime).
#pragma once

#include <cuda_runtime.h>

namespace gdn {

inline int current_device_attribute(cudaDeviceAttr attr) {
  int dev = 0, value = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&value, attr, dev) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it so later calls do not see it
    return 0;
  }
  return value;
}

}  // namespace gdn

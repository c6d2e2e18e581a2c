// fp32 <-> its IEEE bits, for host code and CUDA kernels alike: the register moves on the device,
// memcpy on the host (no aliasing questions).
#pragma once

#include <cstdint>
#include <cstring>

#include "core/host_device.h"

namespace gdn {

GDN_HD float bits_to_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

GDN_HD uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

}  // namespace gdn

// The usual "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" text of a CUDA device UUID (what
// nvidia-smi -L prints), the key of the calibration cache.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace gdn {

inline std::string cuda_uuid_text(const cudaUUID_t& id) {
  static const char* hex = "0123456789abcdef";
  std::string s = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    const auto b = static_cast<unsigned char>(id.bytes[i]);
    s += hex[b >> 4];
    s += hex[b & 15];
  }
  return s;
}

}  // namespace gdn

// The state-pool slot of row i (docs/method.md 2.2): indices are int32 or int64, -1 = padding row.
// One function for the kernels, the CPU variants, the reference and the verifier.
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "core/types.h"

namespace gdn {

GDN_HD int64_t slot_at(const void* indices, DType index_dtype, int64_t i) {
  return index_dtype == DType::i32 ? int64_t(static_cast<const int32_t*>(indices)[i])
                                   : static_cast<const int64_t*>(indices)[i];
}

}  // namespace gdn

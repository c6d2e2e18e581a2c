// Plain argument structs shared by the op contracts. Included by host code and by .cu files,
// so it holds only PODs and pointers (no CUDA or STL types).
#pragma once

#include <cstdint>

#include "core/types.h"

namespace gdn {

// The gate inputs of docs/method.md 1, either form. Pointers of the unused form are null.
//   log: g [rows, HV] fp32 (natural-log decay), beta [rows, HV] fp32
//   raw: A_log [HV] fp32, a [rows, HV] bf16, dt_bias [HV] fp32, b [rows, HV] bf16;
//        g = -exp(A_log) * softplus(a + dt_bias) (softplus(x) = x for x > 20), beta = sigmoid(b)
struct GateArgs {
  GateForm form = GateForm::log;
  const float* g = nullptr;
  const float* beta = nullptr;
  const float* A_log = nullptr;
  const uint16_t* a = nullptr;  // bf16 bits
  const float* dt_bias = nullptr;
  const uint16_t* b = nullptr;  // bf16 bits
};

}  // namespace gdn

// CUDA_CHECK(expr): run a CUDA runtime call and turn a failure into gdn::runtime_error (exit
// code 4) whose message names the call, the error and where it happened.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "core/errors.h"

namespace gdn {

inline std::string cuda_error_text(cudaError_t err) {
  return std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ")";
}

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  throw runtime_error(std::string("CUDA call failed: ") + call + ": " + cuda_error_text(err) + " at " + file +
                      ":" + std::to_string(line));
}

// After a variant's launch(): a launch error (bad grid, missing kernel image) is reported here
// instead of being timed as an empty sample.
inline void check_launch(const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw runtime_error(std::string(what) + " failed to launch: " + cuda_error_text(err));
}

}  // namespace gdn

#define CUDA_CHECK(expr)                                                              \
  do {                                                                                \
    const cudaError_t gdn_cuda_check_err_ = (expr);                                   \
    if (gdn_cuda_check_err_ != cudaSuccess) {                                         \
      ::gdn::throw_cuda_error(gdn_cuda_check_err_, #expr, __FILE__, __LINE__);        \
    }                                                                                 \
  } while (0)

// The cold-mode cache flush (docs/method.md 7): before each sample, drop persisting L2 lines and
// overwrite a device buffer of max(2 x L2, 64 MiB) with a kernel on the timing stream. The buffer
// is allocated once (nvbench #100: per-sample allocation costs far more than the flush).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace gdn {

class L2Flush {
 public:
  // Part of the flush kernel's name, so tests and reports can recognise its records.
  static constexpr const char* kKernelTag = "l2_flush";

  L2Flush(int device, cudaStream_t stream);
  ~L2Flush();
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;

  // Enqueues the flush on the stream (does not synchronise).
  void operator()();
  std::size_t bytes() const { return bytes_; }

  // max(2 x l2_bytes, 64 MiB), rounded up to 16 bytes.
  static std::size_t buffer_bytes(std::size_t l2_bytes);

 private:
  cudaStream_t stream_;
  void* buffer_ = nullptr;
  std::size_t bytes_ = 0;
  int grid_ = 0;
  bool reset_persisting_ = false;
  uint32_t round_ = 0;
};

}  // namespace gdn

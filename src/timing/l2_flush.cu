#include "timing/l2_flush.h"

#include <algorithm>

#include "core/cuda_check.h"

namespace gdn {
namespace {

// Plain 16-byte stores over the whole buffer; the value changes every round so no two flushes
// write the same bytes.
__global__ void l2_flush_kernel(uint4* buffer, std::size_t count, uint32_t round) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const uint4 value = make_uint4(round, round + 1, round + 2, round + 3);
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    buffer[i] = value;
  }
}

constexpr int kBlock = 256;

}  // namespace

std::size_t L2Flush::buffer_bytes(std::size_t l2_bytes) {
  const std::size_t bytes = std::max<std::size_t>(2 * l2_bytes, std::size_t(64) << 20);
  return (bytes + 15) / 16 * 16;
}

L2Flush::L2Flush(int device, cudaStream_t stream) : stream_(stream) {
  int l2 = 0, sms = 0, persisting = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&persisting, cudaDevAttrMaxPersistingL2CacheSize, device));
  reset_persisting_ = persisting > 0;  // devices without persisting L2 reject the reset
  bytes_ = buffer_bytes(static_cast<std::size_t>(l2));
  grid_ = sms * 4;
  CUDA_CHECK(cudaMalloc(&buffer_, bytes_));
}

L2Flush::~L2Flush() {
  if (buffer_) cudaFree(buffer_);
}

void L2Flush::operator()() {
  // A plain overwrite does not evict lines pinned by an access-policy window.
  if (reset_persisting_) CUDA_CHECK(cudaCtxResetPersistingL2Cache());
  l2_flush_kernel<<<grid_, kBlock, 0, stream_>>>(static_cast<uint4*>(buffer_), bytes_ / 16, ++round_);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace gdn

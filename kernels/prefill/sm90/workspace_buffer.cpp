#include "prefill/sm90/workspace_buffer.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <map>
#include <mutex>

#include "core/cuda_check.h"
#include "core/errors.h"
#include "prefill/sm90/workspace.h"

namespace gdn::sm90 {
namespace {

struct Buffer {
  uint8_t* ptr = nullptr;
  int64_t bytes = 0;
};

constexpr int64_t kGrain = int64_t(64) << 20;  // grow in 64 MiB steps: a sweep's growing shapes reallocate rarely

}  // namespace

uint8_t* workspace_for(int64_t bytes, void* stream) {
  static std::mutex mutex;
  static std::map<int, Buffer> buffers;  // freed with the process
  const std::lock_guard<std::mutex> lock(mutex);
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  Buffer& b = buffers[dev];
  if (bytes <= b.bytes) return b.ptr;
  const auto s = static_cast<cudaStream_t>(stream);
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(s, &capture));
  if (capture != cudaStreamCaptureStatusNone)
    throw runtime_error(fmt::format("prefill/sm90 (two_pass) needs {:.1f} MiB of workspace and holds {:.1f} MiB: launch the "
                                    "call once outside the graph capture so it can grow",
                                    bytes / 1048576.0, b.bytes / 1048576.0));
  CUDA_CHECK(cudaStreamSynchronize(s));
  if (b.ptr != nullptr) CUDA_CHECK(cudaFree(b.ptr));
  b = Buffer{};
  const int64_t want = (bytes + kGrain - 1) / kGrain * kGrain;
  CUDA_CHECK(cudaMalloc(&b.ptr, size_t(want)));
  b.bytes = want;
  return b.ptr;
}

uint8_t* two_pass_workspace(int64_t T, int64_t N, int HV, int seg_chunks, void* stream, CpArgs* cp) {
  const int64_t prep_bytes = (workspace_bytes(T, N, HV) + 255) / 256 * 256;
  const int64_t seg_bytes = segment_buffer_bytes(T, N, HV, seg_chunks);
  uint8_t* ws = workspace_for(prep_bytes + 3 * seg_bytes + segment_flag_bytes(T, N, HV, seg_chunks), stream);
  *cp = CpArgs{};
  cp->seg_chunks = seg_chunks;
  if (seg_chunks > 0) {
    cp->m = reinterpret_cast<float*>(ws + prep_bytes);
    cp->n = reinterpret_cast<float*>(ws + prep_bytes + seg_bytes);
    cp->start = reinterpret_cast<float*>(ws + prep_bytes + 2 * seg_bytes);
    cp->warm = reinterpret_cast<int*>(ws + prep_bytes + 3 * seg_bytes);
  }
  return ws;
}

}  // namespace gdn::sm90

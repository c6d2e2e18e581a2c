// calibrate(): the two roofline denominators, measured on the device. Copy bandwidth from a
// large device-to-device copy kernel; the bf16 rate from a compute-only kernel issuing
// back-to-back tensor-core MMAs on operands that never leave the SM (wgmma on sm_90a,
// mma.sync elsewhere from sm_80).
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cuda/ptx>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <functional>
#include <limits>
#include <vector>

#include "common/gdn_math.cuh"
#include "common/ptx/mma_sync_bf16.cuh"
#include "common/ptx/wgmma.cuh"
#include "device/calibrate.h"
#include "core/cuda_check.h"
#include "device/cuda_uuid.h"

namespace gdn {
namespace {

// ---- copy bandwidth ------------------------------------------------------------------------

constexpr int kCopyThreads = 256;

// Grid-stride 16-byte copy with four loads in flight per thread before their stores.
__global__ void __launch_bounds__(kCopyThreads) calibrate_copy_kernel(const uint4* __restrict__ src,
                                                                      uint4* __restrict__ dst, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

// ---- bf16 tensor-core rate -----------------------------------------------------------------

enum MmaMethod : int { kMmaNone = 1, kMmaSync = 2, kWgmma = 3 };

constexpr int kMmaThreads = 256;     // two warpgroups, eight warps
constexpr int kWgmmaPerGroup = 4;    // wgmmas per commit group
constexpr int kMmaSyncChains = 8;    // independent accumulators per warp for mma.sync

#if GDN_HAS_WGMMA || GDN_HAS_MMA_SYNC_BF16
// Small exact bf16 values of both signs; zeros would let the tensor cores idle on power.
__device__ inline float operand_value(int i) { return static_cast<float>((i * 37 + 11) % 15 - 7) * (1.0f / 64); }

#endif

// Each thread leaves the sum of its accumulators in sink (keeps the work observable) and
// block 0 reports which instruction ran, since the driver picks the cubin (sm_90a or not).
__global__ void __launch_bounds__(kMmaThreads, 1) calibrate_mma_kernel(int iterations, float* sink, int* method) {
  float sum = 0;
  int used = kMmaNone;
#if GDN_HAS_WGMMA
  // A: 64 x 16, B: 256 x 16 (both K-major), no swizzle: 8 x 16-byte core matrices; leading
  // (K) offset 128 B, stride (M/N) offset 256 B.
  __shared__ __align__(128) __nv_bfloat16 a_tile[64 * 16];
  __shared__ __align__(128) __nv_bfloat16 b_tile[256 * 16];
  for (int i = threadIdx.x; i < 64 * 16; i += blockDim.x) a_tile[i] = __float2bfloat16(operand_value(i));
  for (int i = threadIdx.x; i < 256 * 16; i += blockDim.x) b_tile[i] = __float2bfloat16(operand_value(i + 5));
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // generic stores -> visible to wgmma
  __syncthreads();
  const uint64_t desc_a = ptx::wgmma_smem_desc(a_tile, 128, 256);
  const uint64_t desc_b = ptx::wgmma_smem_desc(b_tile, 128, 256);
  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.f;
  ptx::wgmma_fence_operands(acc);
  ptx::wgmma_fence();
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int j = 0; j < kWgmmaPerGroup; ++j) ptx::wgmma_m64n256k16_f32_bf16_ss(acc, desc_a, desc_b, true);
    ptx::wgmma_commit_group();
    ptx::wgmma_wait_group<1>();
  }
  ptx::wgmma_wait_group<0>();
  ptx::wgmma_fence_operands(acc);
#pragma unroll
  for (int i = 0; i < 128; ++i) sum += acc[i];
  used = kWgmma;
#elif GDN_HAS_MMA_SYNC_BF16
  const int lane = threadIdx.x % 32;
  uint32_t a[4], b[2];
#pragma unroll
  for (int k = 0; k < 4; ++k) a[k] = dev::pack_bf16x2(operand_value(lane * 8 + 2 * k), operand_value(lane * 8 + 2 * k + 1));
#pragma unroll
  for (int k = 0; k < 2; ++k) b[k] = dev::pack_bf16x2(operand_value(lane * 4 + 2 * k + 3), operand_value(lane * 4 + 2 * k + 4));
  float acc[kMmaSyncChains][4] = {};
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int c = 0; c < kMmaSyncChains; ++c) ptx::mma_m16n8k16_f32_bf16(acc[c], a, b);
  }
#pragma unroll
  for (int c = 0; c < kMmaSyncChains; ++c) sum += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  used = kMmaSync;
#endif
  sink[static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = sum;
  if (blockIdx.x == 0 && threadIdx.x == 0) *method = used;
}

// FLOPs one block does per loop iteration, by method (2 M N K per MMA).
double flops_per_block_iteration(int method) {
  switch (method) {
    case kWgmma: return (kMmaThreads / 128) * kWgmmaPerGroup * 2.0 * 64 * 256 * 16;
    case kMmaSync: return (kMmaThreads / 32) * kMmaSyncChains * 2.0 * 16 * 8 * 16;
    default: return 0;
  }
}

const char* method_name(int method) {
  switch (method) {
    case kWgmma: return "wgmma m64n256k16";
    case kMmaSync: return "mma.sync m16n8k16";
    default: return "none";
  }
}

// ---- helpers -------------------------------------------------------------------------------

class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) { CUDA_CHECK(cudaMalloc(&p_, bytes)); }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T> T* as() const { return static_cast<T*>(p_); }

 private:
  void* p_ = nullptr;
};

// A stream and a pair of events: times one enqueue at a time.
class EventClock {
 public:
  EventClock() {
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&start_));
    CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~EventClock() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }
  cudaStream_t stream() const { return stream_; }
  double seconds(const std::function<void()>& enqueue) {
    CUDA_CHECK(cudaEventRecord(start_, stream_));
    enqueue();
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(stop_, stream_));
    CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms * 1e-3;
  }
  // Median of `reps` timings after `warmup` untimed runs.
  double median_seconds(int warmup, int reps, const std::function<void()>& enqueue) {
    for (int i = 0; i < warmup; ++i) seconds(enqueue);
    std::vector<double> t(reps);
    for (auto& x : t) x = seconds(enqueue);
    std::sort(t.begin(), t.end());
    return reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
  }

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

std::string utc_now_iso8601() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Bytes per copy buffer: 2 GiB (far beyond any L2), less when memory is short.
std::size_t copy_buffer_bytes(std::size_t l2_bytes) {
  std::size_t free_bytes = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  const std::size_t reserve = std::size_t(512) << 20;
  std::size_t bytes = std::size_t(2) << 30;
  if (free_bytes < 2 * bytes + reserve) bytes = free_bytes > reserve ? (free_bytes - reserve) / 2 : 0;
  bytes = bytes / (std::size_t(1) << 20) * (std::size_t(1) << 20);
  const std::size_t minimum = std::max(8 * l2_bytes, std::size_t(256) << 20);
  if (bytes < minimum) {
    throw runtime_error("copy calibration needs two buffers of at least " + std::to_string(minimum >> 20) +
                        " MiB; only " + std::to_string(free_bytes >> 20) + " MiB of device memory is free");
  }
  return bytes;
}

double measure_copy(const cudaDeviceProp& prop, EventClock& clock, std::size_t* buffer_bytes) {
  const std::size_t bytes = copy_buffer_bytes(static_cast<std::size_t>(prop.l2CacheSize));
  DeviceBuffer src(bytes), dst(bytes);
  CUDA_CHECK(cudaMemsetAsync(src.as<void>(), 1, bytes, clock.stream()));
  const int grid = prop.multiProcessorCount * (2048 / kCopyThreads);
  const std::size_t n = bytes / 16;
  const double kernel_s = clock.median_seconds(3, 21, [&] {
    calibrate_copy_kernel<<<grid, kCopyThreads, 0, clock.stream()>>>(src.as<const uint4>(), dst.as<uint4>(), n);
  });
  // The driver's device-to-device copy beats a plain copy kernel on some parts (H200: 4.24 vs
  // 3.93 TB/s); the ceiling a roofline % refers to is the best of the two.
  const double memcpy_s = clock.median_seconds(3, 21, [&] {
    CUDA_CHECK(cudaMemcpyAsync(dst.as<void>(), src.as<const void>(), bytes, cudaMemcpyDeviceToDevice, clock.stream()));
  });
  *buffer_bytes = bytes;
  return 2.0 * static_cast<double>(bytes) / std::min(kernel_s, memcpy_s);
}

double measure_mma(const cudaDeviceProp& prop, EventClock& clock, int* method_out) {
  int per_sm = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, calibrate_mma_kernel, kMmaThreads, 0));
  const int grid = prop.multiProcessorCount * std::max(per_sm, 1);  // exactly one full wave
  DeviceBuffer sink(static_cast<std::size_t>(grid) * kMmaThreads * sizeof(float));
  DeviceBuffer method(sizeof(int));
  CUDA_CHECK(cudaMemsetAsync(method.as<void>(), 0, sizeof(int), clock.stream()));

  int iterations = 64;
  auto run = [&] {
    calibrate_mma_kernel<<<grid, kMmaThreads, 0, clock.stream()>>>(iterations, sink.as<float>(), method.as<int>());
  };
  clock.seconds(run);  // module load, clocks up
  const double probe = clock.seconds(run);
  // About 20 ms per timed run: long enough to reach steady clocks, short enough to stay cool.
  const double scale = probe > 0 ? 0.02 / probe : 1.0;
  iterations = static_cast<int>(std::clamp(iterations * scale, 64.0, double(1 << 24)));
  const double s = clock.median_seconds(2, 7, run);

  int used = 0;
  CUDA_CHECK(cudaMemcpy(&used, method.as<int>(), sizeof(int), cudaMemcpyDeviceToHost));
  *method_out = used;
  const double flops = flops_per_block_iteration(used) * grid * static_cast<double>(iterations);
  if (flops <= 0) return std::numeric_limits<double>::quiet_NaN();
  return flops / s;
}

}  // namespace

Calibration calibrate(int device) {
  int previous = 0;
  CUDA_CHECK(cudaGetDevice(&previous));
  CUDA_CHECK(cudaSetDevice(device));
  struct Restore {
    int device;
    ~Restore() { cudaSetDevice(device); }
  } restore{previous};

  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  Calibration c;
  c.uuid = cuda_uuid_text(prop.uuid);
  c.device_name = prop.name;
  EventClock clock;
  std::size_t buffer = 0;
  c.copy_bytes_per_s = measure_copy(prop, clock, &buffer);
  c.copy_buffer_bytes = static_cast<double>(buffer);
  int method = 0;
  c.bf16_flops_per_s = measure_mma(prop, clock, &method);
  c.mma_method = method_name(method);
  c.measured_at = utc_now_iso8601();
  return c;
}

}  // namespace gdn

// copy_ceiling: the copy bandwidth at a given size, for judging a bandwidth target at that size
// (gdnbench calibrate measures a 2 GiB buffer; smaller copies are slower, docs/PERFORMANCE.md
// "The copy ceiling at these sizes"). For each TOTAL (bytes read + written, e.g. a row's
// work.bytes from a gdnbench report): cudaMemcpyAsync device-to-device and calibrate's grid-stride
// copy kernel moving TOTAL / 2 bytes, L2 written over before each copy, CUDA events around each,
// median of 41; and an empty kernel between the same events (the events' floor).
//
//   nvcc -O3 -arch=sm_90 -o copy_ceiling scripts/copy_ceiling.cu && ./copy_ceiling 549584896 277970944
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
__global__ void __launch_bounds__(256) copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a; dst[i + stride] = b; dst[i + 2 * stride] = c; dst[i + 3 * stride] = d;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}
__global__ void empty_kernel() {}
int main(int argc, char** argv) {
  cudaDeviceProp p; cudaGetDeviceProperties(&p, 0);
  const size_t flush_bytes = size_t(2) * p.l2CacheSize;
  void *flush, *src, *dst; cudaMalloc(&flush, flush_bytes);
  const size_t maxb = size_t(2) << 30;
  cudaMalloc(&src, maxb); cudaMalloc(&dst, maxb); cudaMemset(src, 1, maxb);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  {  // the event pair's floor: an empty kernel between the events
    std::vector<float> t;
    for (int r = 0; r < 44; ++r) {
      cudaMemsetAsync(flush, r & 0xff, flush_bytes);
      cudaEventRecord(e0); empty_kernel<<<1, 32>>>(); cudaEventRecord(e1); cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 3) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    printf("empty kernel between events: %.2f us\n", t[t.size() / 2] * 1e3);
  }
  for (int a = 1; a < argc; ++a) {
    const size_t total = strtoull(argv[a], nullptr, 10);
    const size_t bytes = (total / 2) / 16 * 16;
    for (int method = 0; method < 2; ++method) {
      std::vector<float> t;
      for (int r = 0; r < 44; ++r) {
        cudaMemsetAsync(flush, r & 0xff, flush_bytes);
        cudaEventRecord(e0);
        if (method == 0) cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice);
        else copy_kernel<<<p.multiProcessorCount * 8, 256>>>((const uint4*)src, (uint4*)dst, bytes / 16);
        cudaEventRecord(e1); cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 3) t.push_back(ms);
      }
      std::sort(t.begin(), t.end());
      const double us = t[t.size() / 2] * 1e3;
      printf("%s total %.1f MB: %.2f us, %.3f TB/s\n", method ? "kernel" : "memcpy", 2.0 * bytes / 1e6, us, 2.0 * bytes / us / 1e6);
    }
  }
  return 0;
}

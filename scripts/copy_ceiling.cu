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

// Exits with the failing call's message: a silent failure would print a time for no copy at all.
static void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  fprintf(stderr, "copy_ceiling: %s: %s\n", what, cudaGetErrorString(e));
  exit(1);
}

// Median time (us) of `launch` between two events over 41 samples (3 warm-ups), the L2 written
// over before each.
template <class F> static double median_us(void* flush, size_t flush_bytes, F launch) {
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "cudaEventCreate");
  check(cudaEventCreate(&e1), "cudaEventCreate");
  std::vector<float> t;
  for (int r = 0; r < 44; ++r) {
    check(cudaMemsetAsync(flush, r & 0xff, flush_bytes), "L2 flush");
    check(cudaEventRecord(e0), "cudaEventRecord");
    launch();
    check(cudaGetLastError(), "launch");
    check(cudaEventRecord(e1), "cudaEventRecord");
    check(cudaEventSynchronize(e1), "cudaEventSynchronize");
    float ms;
    check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
    if (r >= 3) t.push_back(ms);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2] * 1e3;
}

int main(int argc, char** argv) {
  cudaDeviceProp p;
  check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
  const size_t flush_bytes = size_t(2) * p.l2CacheSize;
  const size_t maxb = size_t(2) << 30;
  void *flush, *src, *dst;
  check(cudaMalloc(&flush, flush_bytes), "cudaMalloc");
  check(cudaMalloc(&src, maxb), "cudaMalloc");
  check(cudaMalloc(&dst, maxb), "cudaMalloc");
  check(cudaMemset(src, 1, maxb), "cudaMemset");
  printf("empty kernel between events: %.2f us\n",
         median_us(flush, flush_bytes, [] { empty_kernel<<<1, 32>>>(); }));
  for (int a = 1; a < argc; ++a) {
    const size_t total = strtoull(argv[a], nullptr, 10);
    const size_t bytes = (total / 2) / 16 * 16;
    if (bytes == 0 || bytes > maxb) {
      fprintf(stderr, "copy_ceiling: TOTAL %s: give bytes read + written, 32 to %zu\n", argv[a], 2 * maxb);
      return 2;
    }
    for (int method = 0; method < 2; ++method) {
      const double us = median_us(flush, flush_bytes, [&] {
        if (method == 0) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpyAsync");
        else copy_kernel<<<p.multiProcessorCount * 8, 256>>>((const uint4*)src, (uint4*)dst, bytes / 16);
      });
      printf("%s total %.1f MB: %.2f us, %.3f TB/s\n", method ? "kernel" : "memcpy", 2.0 * bytes / 1e6, us,
             2.0 * bytes / us / 1e6);
    }
  }
  return 0;
}

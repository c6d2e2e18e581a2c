#include "timing/sm_clock.h"

#include <cuda/ptx>

#include "core/cuda_check.h"

namespace gdn {
namespace {

// One block per SM, so SM 0 runs at least one of them; only SM 0 writes, because cycle
// counters of different SMs are unrelated. Duplicate writers on SM 0 store near-equal values.
__global__ void sm_clock_stamp_kernel(uint64_t* slot) {
  if (threadIdx.x != 0 || cuda::ptx::get_sreg_smid() != 0) return;
  const uint64_t ns = cuda::ptx::get_sreg_globaltimer();
  const uint64_t cycles = clock64();
  slot[0] = ns;
  slot[1] = cycles;
}

}  // namespace

SmClockProbe::SmClockProbe(int device, cudaStream_t stream) : stream_(stream) {
  CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device));
  int khz = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device));
  max_clock_mhz_ = khz / 1000;
}

SmClockProbe::~SmClockProbe() {
  if (stamps_) cudaFree(stamps_);
}

void SmClockProbe::begin_batch(int n) {
  if (n > capacity_) {
    if (stamps_) CUDA_CHECK(cudaFree(stamps_));
    stamps_ = nullptr;
    capacity_ = 0;
    CUDA_CHECK(cudaMalloc(&stamps_, sizeof(uint64_t) * 4 * n));
    capacity_ = n;
  }
  CUDA_CHECK(cudaMemsetAsync(stamps_, 0, sizeof(uint64_t) * 4 * n, stream_));
}

void SmClockProbe::stamp(int slot) {
  sm_clock_stamp_kernel<<<sm_count_, 32, 0, stream_>>>(stamps_ + 2 * slot);
  CUDA_CHECK(cudaGetLastError());
}

void SmClockProbe::stamp_before(int sample) { stamp(2 * sample); }
void SmClockProbe::stamp_after(int sample) { stamp(2 * sample + 1); }

std::vector<double> SmClockProbe::read_mhz(int n) {
  std::vector<uint64_t> host(static_cast<size_t>(4) * n);
  CUDA_CHECK(cudaMemcpyAsync(host.data(), stamps_, sizeof(uint64_t) * host.size(), cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  std::vector<double> mhz(n, 0.0);
  for (int i = 0; i < n; ++i) {
    const uint64_t* s = &host[4 * static_cast<size_t>(i)];
    const uint64_t ns0 = s[0], cyc0 = s[1], ns1 = s[2], cyc1 = s[3];
    if (ns0 == 0 || ns1 <= ns0 || cyc1 <= cyc0) continue;  // SM 0 ran no stamp, or timer too coarse
    mhz[i] = static_cast<double>(cyc1 - cyc0) / static_cast<double>(ns1 - ns0) * 1e3;
    if (max_clock_mhz_ > 0 && mhz[i] < kThrottleFraction * max_clock_mhz_) throttled_.store(true);
  }
  return mhz;
}

}  // namespace gdn

// The GPU engine on a real device: CUPTI and event timers, the L2 flush, graph mode, the SM
// clock, calibration, device info. Every test skips itself with the reason when no CUDA device
// is present (CI). A .cu file because it needs its own kernels.
//
// Self-check on a GPU host:  build/tests/gpu_tests --gtest_filter='SelfCheck.*'
// prints the device, the timer in use (and why, when it is the fallback), CUPTI vs events on a
// 1 ms kernel, hot vs cold on an L2-resident read, and the calibration.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cuda/ptx>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "test_support.h"
#include "core/registry.h"
#include "device/calibrate.h"
#include "core/cuda_check.h"
#include "device/info.h"
#include "run/backend.h"
#include "timing/cupti_loader.h"
#include "timing/cupti_timer.h"
#include "timing/event_timer.h"
#include "timing/l2_flush.h"

namespace gdn {
namespace {

// ---- test kernels --------------------------------------------------------------------------

// Busy-waits on the GPU's nanosecond timer: a kernel of known length, independent of clocks.
__global__ void spin_kernel_a(uint64_t ns) {
  const uint64_t t0 = cuda::ptx::get_sreg_globaltimer();
  while (cuda::ptx::get_sreg_globaltimer() - t0 < ns) {
  }
}

__global__ void spin_kernel_b(uint64_t ns) {
  const uint64_t t0 = cuda::ptx::get_sreg_globaltimer();
  while (cuda::ptx::get_sreg_globaltimer() - t0 < ns) {
  }
}

// A second, visible flush in before(): its record must never be attributed to a sample.
__global__ void test_flush_kernel(uint4* buffer, std::size_t count) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    buffer[i] = make_uint4(1, 2, 3, 4);
  }
}

// Reads a working set once (sums it), so its time depends on where the data lives.
__global__ void read_kernel(const uint4* buffer, std::size_t count, unsigned* out) {
  unsigned acc = 0;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    const uint4 v = buffer[i];
    acc += v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *out = acc;  // practically never; keeps the loads alive
}

// ---- helpers -------------------------------------------------------------------------------

double median_seconds(const std::vector<Sample>& samples) {
  std::vector<double> t;
  for (const auto& s : samples) t.push_back(s.seconds);
  std::sort(t.begin(), t.end());
  return t.empty() ? 0 : t[t.size() / 2];
}

using test::contains;
using test::ScopedEnv;


class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    devices_ = query_devices(&why);
    if (devices_.empty()) GTEST_SKIP() << "no CUDA device here (" << why << ")";
    backend_ = make_cuda_backend(0, &why);
    ASSERT_TRUE(backend_) << why;
    stream_ = static_cast<cudaStream_t>(backend_->launch_context().stream);
  }

  std::function<void()> spin(uint64_t ns) {
    return [this, ns] { spin_kernel_a<<<1, 1, 0, stream_>>>(ns); };
  }

  const DeviceInfo& device() const { return devices_.front(); }

  std::vector<DeviceInfo> devices_;
  std::unique_ptr<ExecBackend> backend_;
  cudaStream_t stream_ = nullptr;
};

#define CUPTI_TIMER_OR_SKIP(var)                                                   \
  std::string var##_why;                                                           \
  auto var = make_cupti_timer(stream_, nullptr, &var##_why);                       \
  if (!var) GTEST_SKIP() << "CUPTI timer unavailable: " << var##_why

// ---- tests ---------------------------------------------------------------------------------

TEST_F(GpuTest, DeviceInfoIsComplete) {
  const DeviceInfo& d = device();
  EXPECT_FALSE(d.name.empty());
  EXPECT_EQ(d.uuid.rfind("GPU-", 0), 0u) << d.uuid;
  EXPECT_EQ(d.uuid.size(), 40u) << d.uuid;
  EXPECT_GE(d.arch(), 75);
  EXPECT_GT(d.sm_count, 0);
  EXPECT_GT(d.l2_bytes, 0u);
  EXPECT_GT(d.memory_bytes, d.memory_free_bytes / 2);
  EXPECT_GT(d.sm_clock_max_mhz, 100);
  EXPECT_GT(d.mem_clock_mhz, 100);
  EXPECT_GT(d.mem_bus_width, 0);
  EXPECT_FALSE(d.driver_version.empty());
  EXPECT_FALSE(d.runtime_version.empty());
}

TEST_F(GpuTest, CanRunExplainsRefusals) {
  Variant cpu;
  cpu.backend = Backend::cpu;
  EXPECT_EQ(backend_->can_run(cpu), "CPU variant");
  Variant any;
  any.backend = Backend::cuda;
  any.min_arch = 75;
  EXPECT_EQ(backend_->can_run(any), "");
  Variant future;
  future.backend = Backend::cuda;
  future.min_arch = 200;
  future.max_arch = 210;
  const std::string why = backend_->can_run(future);
  EXPECT_TRUE(contains(why, "needs sm_200..sm_210")) << why;
  EXPECT_TRUE(contains(why, "device is sm_" + std::to_string(device().arch()))) << why;
}

TEST_F(GpuTest, MemoryRoundTrip) {
  std::vector<int> host(1000), back(1000, 0);
  for (int i = 0; i < 1000; ++i) host[i] = i * 7;
  void* d = backend_->alloc(host.size() * sizeof(int));
  backend_->to_device(d, host.data(), host.size() * sizeof(int));
  backend_->to_host(back.data(), d, back.size() * sizeof(int));
  backend_->free(d);
  EXPECT_EQ(host, back);
  EXPECT_GT(backend_->free_memory(), 0u);
}

TEST_F(GpuTest, FlushIsNeverInsideASample) {
  CUPTI_TIMER_OR_SKIP(timer);
  const std::size_t count = std::size_t(8) << 20;  // 128 MiB of uint4
  uint4* extra = static_cast<uint4*>(backend_->alloc(count * sizeof(uint4)));
  auto cold = backend_->before_sample(TimingMode::cold);
  SampleHooks hooks;
  hooks.before = [&] {
    cold();  // the backend's L2 flush kernel
    test_flush_kernel<<<device().sm_count * 4, 256, 0, stream_>>>(extra, count);
  };
  hooks.launch = spin(20000);
  const auto samples = timer->measure(hooks, 16);
  backend_->free(extra);
  ASSERT_EQ(samples.size(), 16u);
  for (const auto& s : samples) {
    ASSERT_EQ(s.kernels.size(), 1u);
    EXPECT_TRUE(contains(s.kernels[0].name, "spin_kernel_a")) << s.kernels[0].name;
    EXPECT_FALSE(contains(s.kernels[0].name, "flush")) << s.kernels[0].name;
    EXPECT_GE(s.seconds, 20e-6);
    EXPECT_DOUBLE_EQ(s.seconds, s.kernels[0].seconds);
  }
}

TEST_F(GpuTest, CuptiAndEventsAgreeOnALongKernel) {
  CUPTI_TIMER_OR_SKIP(cupti);
  auto events = make_event_timer(stream_);
  SampleHooks hooks;
  hooks.launch = spin(1000000);  // 1 ms
  const double c = median_seconds(cupti->measure(hooks, 5));
  const double e = median_seconds(events->measure(hooks, 5));
  std::printf("1 ms spin: cupti %.4f ms, events %.4f ms\n", c * 1e3, e * 1e3);
  EXPECT_GE(c, 1e-3);
  EXPECT_NEAR(c, e, 0.03 * e);
}

TEST_F(GpuTest, MultiKernelSampleKeepsEachKernelAndSpansBoth) {
  CUPTI_TIMER_OR_SKIP(timer);
  SampleHooks hooks;
  hooks.launch = [&] {
    spin_kernel_a<<<1, 1, 0, stream_>>>(100000);
    spin_kernel_b<<<1, 1, 0, stream_>>>(200000);
  };
  const auto samples = timer->measure(hooks, 4);
  for (const auto& s : samples) {
    ASSERT_EQ(s.kernels.size(), 2u);
    EXPECT_TRUE(contains(s.kernels[0].name, "spin_kernel_a")) << s.kernels[0].name;
    EXPECT_TRUE(contains(s.kernels[1].name, "spin_kernel_b")) << s.kernels[1].name;
    EXPECT_GE(s.kernels[0].seconds, 100e-6);
    EXPECT_GE(s.kernels[1].seconds, 200e-6);
    // One stream runs them back to back: the span holds both durations and the gap.
    EXPECT_GE(s.seconds + 1e-12, s.kernels[0].seconds + s.kernels[1].seconds);
  }
}

TEST_F(GpuTest, LaunchingNothingIsAnError) {
  CUPTI_TIMER_OR_SKIP(timer);
  SampleHooks hooks;
  hooks.launch = [] {};
  try {
    timer->measure(hooks, 2);
    FAIL() << "an empty launch was timed";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "no kernel")) << e.what();
  }
}

TEST_F(GpuTest, ColdIsSlowerThanHotForAnL2ResidentWorkingSet) {
  const std::size_t bytes = std::min<std::size_t>(device().l2_bytes / 2, std::size_t(16) << 20);
  const std::size_t count = bytes / sizeof(uint4);
  uint4* data = static_cast<uint4*>(backend_->alloc(bytes));
  unsigned* out = static_cast<unsigned*>(backend_->alloc(sizeof(unsigned)));
  CUDA_CHECK(cudaMemsetAsync(data, 1, bytes, stream_));
  SampleHooks hooks;
  hooks.launch = [&] { read_kernel<<<device().sm_count * 4, 256, 0, stream_>>>(data, count, out); };
  double median[2];
  const TimingMode modes[2] = {TimingMode::hot, TimingMode::cold};
  for (int m = 0; m < 2; ++m) {
    auto timer = backend_->make_timer(modes[m]);
    hooks.before = backend_->before_sample(modes[m]);
    hooks.launch();  // warm-up: first touch, module load
    median[m] = median_seconds(timer->measure(hooks, 31));
  }
  backend_->free(data);
  backend_->free(out);
  std::printf("%zu MiB read: hot %.2f us, cold %.2f us\n", bytes >> 20, median[0] * 1e6, median[1] * 1e6);
  EXPECT_GT(median[1], median[0]);
}

TEST_F(GpuTest, GraphModeCapturesOnceAndTimesReplays) {
  auto timer = backend_->make_timer(TimingMode::graph);
  int captures = 0;
  SampleHooks hooks;
  hooks.before = backend_->before_sample(TimingMode::graph);
  hooks.launch = [&] {
    ++captures;
    spin_kernel_a<<<1, 1, 0, stream_>>>(50000);
    spin_kernel_b<<<1, 1, 0, stream_>>>(50000);
  };
  const auto samples = timer->measure(hooks, 6);
  EXPECT_EQ(captures, 1);  // launch() ran once, for the capture; samples are replays
  ASSERT_EQ(samples.size(), 6u);
  for (const auto& s : samples) {
    EXPECT_GE(s.seconds, 100e-6);
    if (timer->name() == "cupti") {
      ASSERT_EQ(s.kernels.size(), 2u);
      EXPECT_TRUE(contains(s.kernels[0].name, "spin_kernel_a")) << s.kernels[0].name;
    }
  }
  timer->measure(hooks, 2);
  EXPECT_EQ(captures, 2);  // every batch captures afresh
}

TEST_F(GpuTest, EventTimerIsTheFallbackWhenCuptiIsDisabled) {
  {
    ScopedEnv off(kDisableCuptiEnv, "1");
    auto timer = backend_->make_timer(TimingMode::cold);
    EXPECT_EQ(timer->name(), "events");
    EXPECT_TRUE(contains(cupti_unavailable_reason(), kDisableCuptiEnv)) << cupti_unavailable_reason();
    SampleHooks hooks;
    hooks.before = backend_->before_sample(TimingMode::cold);
    hooks.launch = spin(50000);
    const auto samples = timer->measure(hooks, 3);
    for (const auto& s : samples) EXPECT_GE(s.seconds, 50e-6);
  }
  std::string why;
  if (start_cupti_tracing(&why)) {
    EXPECT_EQ(backend_->make_timer(TimingMode::cold)->name(), "cupti");
    EXPECT_EQ(cupti_unavailable_reason(), "");
  }
}

TEST_F(GpuTest, SamplesCarryThePlausibleSmClock) {
  auto timer = backend_->make_timer(TimingMode::hot);
  SampleHooks hooks;
  hooks.launch = spin(200000);
  const auto samples = timer->measure(hooks, 5);
  int known = 0;
  for (const auto& s : samples) {
    if (s.sm_clock_mhz <= 0) continue;
    ++known;
    EXPECT_GT(s.sm_clock_mhz, 100.0);
    EXPECT_LT(s.sm_clock_mhz, 1.25 * device().sm_clock_max_mhz);
  }
  EXPECT_GT(known, 0) << "no sample saw SM 0's clock stamps";
  backend_->throttled_since_last_check();  // value depends on the machine; must not throw
}

TEST_F(GpuTest, CalibrationIsPlausibleAndCached) {
  const auto dir = std::filesystem::temp_directory_path() / ("gdnbench-gpu-cal-" + std::to_string(::getpid()));
  ScopedEnv cache("XDG_CACHE_HOME", dir.string());
  bool cached = true;
  const Calibration c = load_or_calibrate(0, true, &cached);
  EXPECT_FALSE(cached);
  std::printf("calibration: copy %.3f TB/s (2 x %.0f MiB), bf16 %.1f TFLOP/s via %s\n", c.copy_bytes_per_s / 1e12,
              c.copy_buffer_bytes / (1 << 20), c.bf16_flops_per_s / 1e12, c.mma_method.c_str());
  EXPECT_EQ(c.uuid, device().uuid);
  EXPECT_GT(c.copy_bytes_per_s, 1e11);
  EXPECT_LT(c.copy_bytes_per_s, 2e13);
  if (device().arch() >= 80) {
    EXPECT_GT(c.bf16_flops_per_s, 1e13);
    EXPECT_LT(c.bf16_flops_per_s, 1e16);
  }
  if (device().arch() == 90) EXPECT_EQ(c.mma_method, "wgmma m64n256k16") << "the driver loaded the non-sm_90a cubin";
  const Calibration again = load_or_calibrate(0, false, &cached);
  EXPECT_TRUE(cached);
  EXPECT_DOUBLE_EQ(again.copy_bytes_per_s, c.copy_bytes_per_s);
  EXPECT_TRUE(std::filesystem::exists(calibration_cache_path()));
  std::filesystem::remove_all(dir);
}

// ---- self-check ----------------------------------------------------------------------------

TEST(SelfCheck, Summary) {
  std::string why;
  const auto devices = query_devices(&why);
  if (devices.empty()) GTEST_SKIP() << "no CUDA device here (" << why << ")";
  const DeviceInfo& d = devices.front();
  std::printf("device 0: %s (%s) sm_%d, %d SMs, L2 %.0f MiB, %.1f GiB (%.1f free), SM clock max %d MHz, "
              "memory %d MHz x %d bit\n",
              d.name.c_str(), d.uuid.c_str(), d.arch(), d.sm_count, d.l2_bytes / 1048576.0, d.memory_bytes / 1073741824.0,
              d.memory_free_bytes / 1073741824.0, d.sm_clock_max_mhz, d.mem_clock_mhz, d.mem_bus_width);
  std::printf("driver %s, runtime %s, CUPTI %s\n", d.driver_version.c_str(), d.runtime_version.c_str(),
              d.cupti_version.empty() ? "(not loaded)" : d.cupti_version.c_str());
  auto backend = make_cuda_backend(0, &why);
  ASSERT_TRUE(backend) << why;
  auto stream = static_cast<cudaStream_t>(backend->launch_context().stream);
  auto timer = backend->make_timer(TimingMode::cold);
  std::printf("timer: %s%s%s\n", timer->name().c_str(), timer->name() == "cupti" ? "" : " because ",
              cupti_unavailable_reason().c_str());
  SampleHooks hooks;
  hooks.before = backend->before_sample(TimingMode::cold);
  hooks.launch = [&] { spin_kernel_a<<<1, 1, 0, stream>>>(1000000); };
  const auto samples = timer->measure(hooks, 5);
  const double events = median_seconds(make_event_timer(stream)->measure(hooks, 5));
  std::printf("1 ms spin: %s %.4f ms (clock %.0f MHz), events %.4f ms\n", timer->name().c_str(),
              median_seconds(samples) * 1e3, samples.back().sm_clock_mhz, events * 1e3);
  const Peak copy = backend->peak(true), mma = backend->peak(false);
  std::printf("peaks: copy %.3f TB/s, bf16 %.1f TFLOP/s (%s; cache %s)\n", copy.value / 1e12, mma.value / 1e12,
              copy.source.c_str(), calibration_cache_path().c_str());
  EXPECT_GT(copy.value, 0);
  EXPECT_FALSE(samples.empty());
}

}  // namespace
}  // namespace gdn

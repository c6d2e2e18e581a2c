// make_cuda_backend (run/backend.h): one CUDA device, one non-blocking stream for everything a
// case does (transfers, launches, flushes), CUPTI timing with an event fallback.
#include <cuda_runtime_api.h>

#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <string>

#include "device/calibrate.h"
#include "core/cuda_check.h"
#include "device/cuda_device.h"
#include "device/info.h"
#include "run/backend.h"
#include "timing/cupti_timer.h"
#include "timing/event_timer.h"
#include "timing/graph_timer.h"
#include "timing/l2_flush.h"
#include "timing/sm_clock.h"

namespace gdn {
namespace {

std::string arch_text(int arch) { return "sm_" + std::to_string(arch); }

class CudaBackend final : public ExecBackend {
 public:
  explicit CudaBackend(const DeviceInfo& info) : info_(info) {
    CUDA_CHECK(cudaSetDevice(info_.index));
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    clock_ = std::make_shared<SmClockProbe>(info_.index, stream_);
  }

  ~CudaBackend() override {
    cudaSetDevice(info_.index);
    cudaStreamSynchronize(stream_);
    flush_.reset();
    clock_.reset();
    cudaStreamDestroy(stream_);
  }

  Backend kind() const override { return Backend::cuda; }
  std::string device_name() const override { return info_.name; }

  std::string can_run(const Variant& v) const override {
    if (v.backend != Backend::cuda) return "CPU variant";
    const int arch = info_.arch();
    if (arch >= v.min_arch && arch <= v.max_arch) return "";
    const std::string range = v.max_arch >= 1000 ? arch_text(v.min_arch) + " or newer"
                                                 : arch_text(v.min_arch) + ".." + arch_text(v.max_arch);
    return "needs " + range + ", device is " + arch_text(arch);
  }

  void* alloc(std::size_t bytes) override {
    use_device();
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, bytes > 0 ? bytes : 1);  // a valid pointer even for empty tensors
    if (err != cudaSuccess) {
      cudaGetLastError();
      throw runtime_error("cudaMalloc of " + std::to_string(bytes) + " bytes on " + info_.name + " failed: " +
                          cuda_error_text(err) + " (" + std::to_string(free_memory() >> 20) + " MiB free)");
    }
    return p;
  }

  void free(void* p) override {
    if (!p) return;
    use_device();
    CUDA_CHECK(cudaStreamSynchronize(stream_));  // nothing queued may still use it
    CUDA_CHECK(cudaFree(p));
  }

  std::size_t free_memory() const override {
    use_device();
    std::size_t free_bytes = 0, total = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
    return free_bytes;
  }

  // Stream-ordered and completed before returning; a plain cudaMemcpy would run on the legacy
  // default stream, which does not order with a non-blocking stream.
  void to_device(void* dst, const void* host_src, std::size_t bytes) override {
    use_device();
    CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void to_host(void* host_dst, const void* src, std::size_t bytes) override {
    use_device();
    CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void synchronize() override {
    use_device();
    const cudaError_t launch_err = cudaGetLastError();
    if (launch_err != cudaSuccess) throw runtime_error("a kernel failed to launch: " + cuda_error_text(launch_err));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  LaunchContext launch_context() const override {
    LaunchContext ctx;
    ctx.stream = stream_;
    ctx.sm_count = info_.sm_count;
    return ctx;
  }

  std::unique_ptr<Timer> make_timer(TimingMode mode) override {
    use_device();
    std::unique_ptr<Timer> timer = make_cupti_timer(stream_, clock_, nullptr);
    if (!timer) timer = make_event_timer(stream_, clock_);  // cupti_unavailable_reason() says why
    if (mode == TimingMode::graph) timer = make_graph_timer(std::move(timer), stream_);
    return timer;
  }

  std::function<void()> before_sample(TimingMode mode) override {
    if (mode == TimingMode::hot) return [] {};
    // Cold and graph: flush outside the measured span (in graph mode outside the graph too).
    return [this] {
      use_device();
      if (!flush_) flush_ = std::make_unique<L2Flush>(info_.index, stream_);
      (*flush_)();
    };
  }

  Peak peak(bool bandwidth_bound) override {
    ensure_calibration();
    Peak p;
    p.kind = bandwidth_bound ? "copy_bandwidth" : "bf16_mma";
    p.value = std::numeric_limits<double>::quiet_NaN();
    if (calibration_) {
      p.value = bandwidth_bound ? calibration_->copy_bytes_per_s : calibration_->bf16_flops_per_s;
      p.source = calibration_source_;
    } else {
      p.source = "calibration failed: " + calibration_error_;
    }
    return p;
  }

  bool throttled_since_last_check() override { return clock_->throttled_since_last_check(); }

 private:
  void use_device() const { CUDA_CHECK(cudaSetDevice(info_.index)); }

  void ensure_calibration() {
    std::lock_guard<std::mutex> lock(calibration_mu_);
    if (calibration_attempted_) return;
    calibration_attempted_ = true;
    try {
      bool cached = false;
      calibration_ = std::make_unique<Calibration>(load_or_calibrate(info_.index, false, &cached));
      calibration_source_ = cached ? "calibrate cache (measured " + calibration_->measured_at + ")" : "measured now";
    } catch (const std::exception& e) {
      calibration_error_ = e.what();
    }
    use_device();
  }

  DeviceInfo info_;
  cudaStream_t stream_ = nullptr;
  std::shared_ptr<SmClockProbe> clock_;
  std::unique_ptr<L2Flush> flush_;

  std::mutex calibration_mu_;
  bool calibration_attempted_ = false;
  std::unique_ptr<Calibration> calibration_;
  std::string calibration_source_;
  std::string calibration_error_;
};

}  // namespace

std::unique_ptr<ExecBackend> make_cuda_backend(int index, std::string* why) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    query_devices(why);  // the same "no CUDA device: ..." reason as everywhere else
    return nullptr;
  }
  if (index < 0 || index >= count) {
    if (why) *why = "no CUDA device " + std::to_string(index) + " (" + std::to_string(count) + " visible)";
    return nullptr;
  }
  // Tracing starts before this backend launches anything, so everything it runs (warm-ups
  // included) pays the same instrumentation cost. Failure only means the event timer is used.
  start_cupti_tracing();
  try {
    return std::make_unique<CudaBackend>(describe_cuda_device(index));
  } catch (const std::exception& e) {
    if (why) *why = std::string("CUDA device ") + std::to_string(index) + " is not usable: " + e.what();
    return nullptr;
  }
}

}  // namespace gdn

#include "timing/event_timer.h"

#include <vector>

#include "core/cuda_check.h"

namespace gdn {
namespace {

class EventTimer final : public Timer {
 public:
  EventTimer(cudaStream_t stream, std::shared_ptr<SmClockProbe> clock) : stream_(stream), clock_(std::move(clock)) {
    CUDA_CHECK(cudaEventCreate(&start_));
    CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~EventTimer() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }

  std::string name() const override { return "events"; }

  std::vector<Sample> measure(const SampleHooks& hooks, int n) override {
    std::vector<Sample> samples(n > 0 ? n : 0);
    if (n <= 0) return samples;
    cudaGetLastError();  // a stale error from unrelated calls must not be blamed on this launch
    if (clock_) clock_->begin_batch(n);
    for (int i = 0; i < n; ++i) {
      if (hooks.before) hooks.before();
      if (clock_) clock_->stamp_before(i);
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      CUDA_CHECK(cudaEventRecord(start_, stream_));
      hooks.launch();
      check_launch("the timed variant");
      CUDA_CHECK(cudaEventRecord(stop_, stream_));
      CUDA_CHECK(cudaEventSynchronize(stop_));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
      samples[i].seconds = static_cast<double>(ms) * 1e-3;
      if (clock_) clock_->stamp_after(i);
    }
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (clock_) {
      const std::vector<double> mhz = clock_->read_mhz(n);
      for (int i = 0; i < n; ++i) samples[i].sm_clock_mhz = mhz[i];
    }
    return samples;
  }

 private:
  cudaStream_t stream_;
  std::shared_ptr<SmClockProbe> clock_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace

std::unique_ptr<Timer> make_event_timer(cudaStream_t stream, std::shared_ptr<SmClockProbe> clock) {
  return std::make_unique<EventTimer>(stream, std::move(clock));
}

}  // namespace gdn

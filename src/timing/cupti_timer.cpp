#include "timing/cupti_timer.h"

#include <cupti.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/errors.h"
#include "core/cuda_check.h"
#include "timing/cupti_loader.h"
#include "timing/kernel_attribution.h"

namespace gdn {
namespace {

constexpr std::size_t kBufferBytes = 8u << 20;
// Records kept between batches are bounded so an untimed run (verify only) cannot grow forever.
constexpr std::size_t kMaxPendingRecords = 1u << 22;

// The process-wide CUPTI tracer. Never destroyed: CUPTI may deliver buffers while the
// process exits, after static destructors would have run.
class CuptiTracer {
 public:
  static CuptiTracer& get() {
    static CuptiTracer* tracer = new CuptiTracer;
    return *tracer;
  }

  bool start(std::string* why) {
    std::lock_guard<std::mutex> lock(start_mu_);
    if (!attempted_) {
      attempted_ = true;
      started_ = try_start(start_error_);
    }
    if (!started_ && why) *why = start_error_;
    return started_;
  }

  uint64_t now() const {
    uint64_t t = 0;
    const CUptiResult r = api_->get_timestamp(&t);
    if (r != CUPTI_SUCCESS) throw runtime_error("cuptiGetTimestamp failed: " + api_->result_text(r));
    return t;
  }

  // Delivers completed buffers (forced: also those with unfinished records).
  void flush(bool forced) {
    const CUptiResult r = api_->activity_flush_all(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
    if (r != CUPTI_SUCCESS) throw runtime_error("cuptiActivityFlushAll failed: " + api_->result_text(r));
  }

  std::vector<KernelRecord> take() {
    std::lock_guard<std::mutex> lock(records_mu_);
    std::vector<KernelRecord> out;
    out.swap(records_);
    return out;
  }
  std::vector<ApiRecord> take_api() {
    std::lock_guard<std::mutex> lock(records_mu_);
    std::vector<ApiRecord> out;
    out.swap(api_records_);
    return out;
  }

  uint64_t take_dropped() { return dropped_.exchange(0); }

 private:
  bool try_start(std::string& error) {
    std::string why;
    api_ = load_cupti(&why);
    if (!api_) {
      error = why;
      return false;
    }
    CUptiResult r = api_->activity_register_callbacks(&on_buffer_requested, &on_buffer_completed);
    if (r != CUPTI_SUCCESS) {
      error = "cuptiActivityRegisterCallbacks failed: " + api_->result_text(r);
      return false;
    }
    r = api_->activity_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) {
      error = "cuptiActivityEnable(CONCURRENT_KERNEL) failed: " + api_->result_text(r);
      if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        error += " (another CUPTI client such as Nsight Systems/Compute or a sanitizer is attached)";
      }
      return false;
    }
    // Runtime API records give each launch's correlation id with a host timestamp: exact
    // attribution. Without them the time windows still work (with GPU clock skew).
    api_->activity_enable(CUPTI_ACTIVITY_KIND_RUNTIME);
    return true;
  }

  // Interned demangled name for a raw kernel name; called with records_mu_ held.
  const std::string* intern(const char* raw) {
    const std::string key = raw ? raw : "";
    auto it = names_.find(key);
    if (it == names_.end()) it = names_.emplace(key, demangle_kernel_name(raw)).first;
    return &it->second;  // unordered_map keeps element addresses across rehashing
  }

  static void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    *size = *buffer ? kBufferBytes : 0;  // no buffer: CUPTI drops records and counts them
    *max_records = 0;                    // as many as fit
  }

  static void CUPTIAPI on_buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t,
                                           size_t valid_bytes) {
    CuptiTracer& s = get();
    {
      std::lock_guard<std::mutex> lock(s.records_mu_);
      CUpti_Activity* rec = nullptr;
      while (buffer && s.api_->activity_get_next_record(buffer, valid_bytes, &rec) == CUPTI_SUCCESS) {
        if (rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
          const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(rec);
          if (s.api_records_.size() >= kMaxPendingRecords)
            s.api_records_.erase(s.api_records_.begin(), s.api_records_.begin() + kMaxPendingRecords / 2);
          s.api_records_.push_back({a->start, a->correlationId});
          continue;
        }
        if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
        // Only fields that have kept their offsets across the Kernel record versions are read.
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        if (s.records_.size() >= kMaxPendingRecords) s.records_.erase(s.records_.begin(), s.records_.begin() + kMaxPendingRecords / 2);
        s.records_.push_back({k->start, k->end, k->correlationId, k->streamId, s.intern(k->name)});
      }
    }
    size_t dropped = 0;
    if (s.api_->activity_get_num_dropped_records(ctx, stream_id, &dropped) == CUPTI_SUCCESS && dropped > 0) {
      s.dropped_ += dropped;
    }
    std::free(buffer);
  }

  std::mutex start_mu_;
  bool attempted_ = false;
  bool started_ = false;
  std::string start_error_;
  const CuptiApi* api_ = nullptr;

  std::mutex records_mu_;
  std::vector<KernelRecord> records_;
  std::vector<ApiRecord> api_records_;
  std::unordered_map<std::string, std::string> names_;
  std::atomic<uint64_t> dropped_{0};
};

std::mutex g_reason_mu;
std::string g_unavailable_reason;

void set_unavailable_reason(const std::string& why) {
  std::lock_guard<std::mutex> lock(g_reason_mu);
  g_unavailable_reason = why;
}

class CuptiTimer final : public Timer {
 public:
  CuptiTimer(cudaStream_t stream, std::shared_ptr<SmClockProbe> clock) : stream_(stream), clock_(std::move(clock)) {}

  std::string name() const override { return "cupti"; }

  std::vector<Sample> measure(const SampleHooks& hooks, int n) override {
    if (n <= 0) return {};
    CuptiTracer& tracer = CuptiTracer::get();
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    tracer.flush(false);
    tracer.take();  // whatever ran before this batch is not ours
    tracer.take_api();
    tracer.take_dropped();
    cudaGetLastError();  // a stale error from unrelated calls must not be blamed on this launch

    if (clock_) clock_->begin_batch(n);
    std::vector<SampleWindow> windows(n);
    for (int i = 0; i < n; ++i) {
      if (hooks.before) hooks.before();
      if (clock_) clock_->stamp_before(i);
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      windows[i].begin_ns = tracer.now();
      hooks.launch();
      check_launch("the timed variant");
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      windows[i].end_ns = tracer.now();
      if (clock_) clock_->stamp_after(i);
    }
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::vector<double> mhz;
    if (clock_) mhz = clock_->read_mhz(n);

    tracer.flush(false);
    std::vector<KernelRecord> records = tracer.take();
    std::vector<ApiRecord> api = tracer.take_api();
    assign_correlation_ranges(windows, api);
    auto groups = group_by_window(records, windows);
    if (!groups_look_complete(groups)) {
      // A default flush skips buffers CUPTI still considers open; force them out before
      // concluding that a sample really launched nothing.
      tracer.flush(true);
      std::vector<KernelRecord> more = tracer.take();
      records.insert(records.end(), more.begin(), more.end());
      std::vector<ApiRecord> more_api = tracer.take_api();
      api.insert(api.end(), more_api.begin(), more_api.end());
      assign_correlation_ranges(windows, api);
      groups = group_by_window(records, windows);
    }
    if (const uint64_t dropped = tracer.take_dropped()) {
      throw runtime_error("CUPTI dropped " + std::to_string(dropped) +
                          " activity records during a timing batch; the samples would be incomplete");
    }
    std::vector<Sample> samples = samples_from_groups(records, groups);
    for (int i = 0; i < n && i < static_cast<int>(mhz.size()); ++i) samples[i].sm_clock_mhz = mhz[i];
    return samples;
  }

 private:
  cudaStream_t stream_;
  std::shared_ptr<SmClockProbe> clock_;
};

}  // namespace

bool start_cupti_tracing(std::string* why) {
  // Checked before the cached tracer so that the variable works at any time.
  if (cupti_disabled_by_env()) {
    load_cupti(why);  // fills the "disabled by" message
    return false;
  }
  return CuptiTracer::get().start(why);
}

std::unique_ptr<Timer> make_cupti_timer(cudaStream_t stream, std::shared_ptr<SmClockProbe> clock, std::string* why) {
  std::string reason;
  if (!start_cupti_tracing(&reason)) {
    set_unavailable_reason(reason);
    if (why) *why = reason;
    return nullptr;
  }
  set_unavailable_reason("");
  return std::make_unique<CuptiTimer>(stream, std::move(clock));
}

std::string cupti_unavailable_reason() {
  std::lock_guard<std::mutex> lock(g_reason_mu);
  return g_unavailable_reason;
}

}  // namespace gdn

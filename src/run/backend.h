// Where a variant's tensors live and how it is timed: the host (CPU variants) or one CUDA
// device. The runner is written against this interface only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/registry.h"
#include "core/types.h"
#include "report/record.h"
#include "timing/timer.h"

namespace gdn {

struct RunOptions;

class ExecBackend {
 public:
  virtual ~ExecBackend() = default;
  virtual Backend kind() const = 0;
  virtual std::string device_name() const = 0;
  // "" when the variant can run here, else why not (no device, arch out of range, ...).
  virtual std::string can_run(const Variant& v) const = 0;

  // Memory of this backend (host memory for the CPU backend).
  virtual void* alloc(std::size_t bytes) = 0;
  virtual void free(void* p) = 0;
  virtual std::size_t free_memory() const = 0;
  virtual void to_device(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void to_host(void* host_dst, const void* src, std::size_t bytes) = 0;
  virtual void synchronize() = 0;

  virtual LaunchContext launch_context() const = 0;
  // The timer for this mode, and the hook that runs before each sample (cold: cache flush).
  virtual std::unique_ptr<Timer> make_timer(TimingMode mode) = 0;
  virtual std::function<void()> before_sample(TimingMode mode) = 0;
  // The peak a roofline % refers to: copy bandwidth for bandwidth-bound ops, else bf16 MMA rate.
  virtual Peak peak(bool bandwidth_bound) = 0;
  // The peak for one case: the host measures its bandwidth at the case's size; a GPU's peaks
  // do not depend on it.
  virtual Peak peak_for(const WorkModel& work) { return peak(work.bandwidth_bound); }
  // Throttling seen since the last call (GPU clock below threshold), if the backend can tell.
  virtual bool throttled_since_last_check() { return false; }
};

std::unique_ptr<ExecBackend> make_cpu_backend(int threads);
// The CUDA backend for device `index`, or null with `why` set when none is usable here.
std::unique_ptr<ExecBackend> make_cuda_backend(int index, std::string* why);

}  // namespace gdn

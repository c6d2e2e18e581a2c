#include <chrono>

#include "timing/timer.h"

namespace gdn {
namespace {

// CPU variants return when their work is done, so the span around launch() is the kernel time.
class HostTimer final : public Timer {
 public:
  std::string name() const override { return "host"; }

  std::vector<Sample> measure(const SampleHooks& hooks, int n) override {
    using Clock = std::chrono::steady_clock;
    std::vector<Sample> out;
    out.reserve(n > 0 ? std::size_t(n) : 0);
    for (int i = 0; i < n; ++i) {
      if (hooks.before) hooks.before();  // the flush stays outside the span
      const auto t0 = Clock::now();
      hooks.launch();
      const auto t1 = Clock::now();
      Sample s;
      s.seconds = std::chrono::duration<double>(t1 - t0).count();
      out.push_back(std::move(s));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Timer> make_host_timer() { return std::make_unique<HostTimer>(); }

}  // namespace gdn

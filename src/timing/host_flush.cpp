#include "timing/host_flush.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace gdn {
namespace {

constexpr std::size_t kUnknownLlcFlushBytes = std::size_t(64) << 20;

// Keeps the checksum observable so the compiler cannot drop the read-back pass.
std::atomic<uint64_t> g_flush_sink{0};

}  // namespace

std::function<void()> make_host_cache_flush(std::size_t llc_bytes) {
  const std::size_t bytes = llc_bytes > 0 ? 2 * llc_bytes : kUnknownLlcFlushBytes;
  auto buffer = std::make_shared<std::vector<uint64_t>>(bytes / sizeof(uint64_t) + 1);
  auto round = std::make_shared<uint64_t>(0);
  // Single-threaded: this evicts the shared LLC and the calling core's private caches, which is
  // what a cold sample needs; other cores' private L1/L2 are small next to the working sets.
  return [buffer, round] {
    const uint64_t stamp = ++*round;
    auto& b = *buffer;
    // Writes make every line dirty and owned here, so the variant's data cannot survive in the LLC.
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = stamp + i;
    uint64_t sum = 0;
    for (uint64_t x : b) sum += x;
    g_flush_sink.fetch_add(sum, std::memory_order_relaxed);
  };
}

}  // namespace gdn

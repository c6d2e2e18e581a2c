#include "timing/host_flush.h"

#include <algorithm>
#include <atomic>
#include <fmt/format.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace gdn {
namespace {

constexpr std::size_t kUnknownCacheFlushBytes = std::size_t(256) << 20;
constexpr std::size_t kLine = 64;  // the smallest line of the CPUs we flush on; a smaller step is harmless

// Keeps the fallback's read-back observable so the compiler cannot drop it.
std::atomic<uint64_t> g_flush_sink{0};

#if defined(__x86_64__)
bool cpu_has_clflushopt() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 23));
}
const bool kClflushopt = cpu_has_clflushopt();

__attribute__((target("clflushopt"))) void flush_clflushopt(const char* p, const char* end) {
  for (; p < end; p += kLine) _mm_clflushopt(const_cast<char*>(p));
  _mm_mfence();
}
void flush_clflush(const char* p, const char* end) {
  for (; p < end; p += kLine) _mm_clflush(p);
  _mm_mfence();
}
#endif

// The address of a range's first line and how many lines it touches.
struct Lines {
  std::uintptr_t first;
  std::size_t count;
};
Lines lines_of(const HostRange& r) {
  const auto at = reinterpret_cast<std::uintptr_t>(r.data), first = at / kLine * kLine;
  return {first, (at + r.bytes - first + kLine - 1) / kLine};
}

std::size_t line_count(const std::vector<HostRange>& ranges) {
  std::size_t n = 0;
  for (const auto& r : ranges) n += lines_of(r).count;
  return n;
}

// Lines [first, last) of the ranges taken as one sequence.
void flush_line_span(const std::vector<HostRange>& ranges, std::size_t first, std::size_t last) {
  std::size_t at = 0;
  for (const auto& r : ranges) {
    const Lines l = lines_of(r);
    const std::size_t lo = std::max(first, at), hi = std::min(last, at + l.count);
    if (lo < hi) flush_cache_lines(reinterpret_cast<const char*>(l.first + (lo - at) * kLine), (hi - lo) * kLine);
    at += l.count;
    if (at >= last) break;
  }
}

}  // namespace

bool has_cache_line_flush() {
#if defined(__x86_64__) || defined(__aarch64__)
  return true;
#else
  return false;
#endif
}

void flush_cache_lines(const void* data, std::size_t bytes) {
  const char* p = static_cast<const char*>(data);
  const char* end = p + bytes;
#if defined(__x86_64__)
  if (kClflushopt) flush_clflushopt(p, end);
  else flush_clflush(p, end);
#elif defined(__aarch64__)
  uint64_t ctr = 0;
  asm volatile("mrs %0, ctr_el0" : "=r"(ctr));
  const std::size_t step = std::size_t(4) << ((ctr >> 16) & 0xf);  // DminLine: log2 of words
  for (p = reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(p) / step * step); p < end; p += step)
    asm volatile("dc civac, %0" : : "r"(p) : "memory");
  asm volatile("dsb ish" : : : "memory");
#else
  (void)p, (void)end;
#endif
}

HostCacheFlush::HostCacheFlush(HostWorkers& workers, uint64_t cache_bytes, bool overwrite)
    : workers_(workers), overwrite_(overwrite), slices_(std::size_t(workers.size())) {
  const std::size_t total = cache_bytes > 0 ? 2 * cache_bytes : kUnknownCacheFlushBytes;
  slice_words_ = total / sizeof(uint64_t) / std::size_t(workers.size()) + 1;
}

HostCacheFlush::~HostCacheFlush() = default;

void HostCacheFlush::flush(const std::vector<HostRange>& ranges) {
  const std::size_t n = std::size_t(workers_.size());
  if (!overwrite_) {
    const std::size_t lines = line_count(ranges);
    workers_.run([&](int w) { flush_line_span(ranges, lines * std::size_t(w) / n, lines * std::size_t(w + 1) / n); });
    return;
  }
  // Writes make every line dirty and owned by this worker's core, so nothing the variant left
  // survives in its private caches or in the shared ones; the read-back evicts the first writes.
  workers_.run([&](int w) {
    auto& slice = slices_[std::size_t(w)];
    if (!slice) slice.reset(new uint64_t[slice_words_]);
    uint64_t* b = slice.get();
    const uint64_t stamp = g_flush_sink.load(std::memory_order_relaxed) + 1;
    for (std::size_t i = 0; i < slice_words_; ++i) b[i] = stamp + i;
    uint64_t sum = 0;
    for (std::size_t i = 0; i < slice_words_; ++i) sum += b[i];
    g_flush_sink.fetch_add(sum, std::memory_order_relaxed);
  });
}

std::string HostCacheFlush::method() const {
#if defined(__x86_64__)
  const char* how = kClflushopt ? "clflushopt" : "clflush";
#elif defined(__aarch64__)
  const char* how = "dc civac";
#else
  const char* how = "";
#endif
  if (!overwrite_) return fmt::format("{} of the case's buffers on {} workers", how, workers_.size());
  return fmt::format("overwrite of {:.0f} MiB on {} workers", double(slice_words_ * 8 * std::size_t(workers_.size())) / (1 << 20),
                     workers_.size());
}

}  // namespace gdn

#include "timing/kernel_attribution.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>

#include "core/errors.h"

namespace gdn {

void assign_correlation_ranges(std::vector<SampleWindow>& windows, const std::vector<ApiRecord>& api) {
  for (auto& w : windows) {
    uint32_t lo = UINT32_MAX, hi = 0;
    for (const auto& a : api)
      if (a.start_ns >= w.begin_ns && a.start_ns <= w.end_ns) lo = std::min(lo, a.correlation_id), hi = std::max(hi, a.correlation_id);
    w.corr_after = hi > 0 ? lo - 1 : 0;
    w.corr_last = hi;
  }
}

std::vector<std::vector<std::size_t>> group_by_window(const std::vector<KernelRecord>& records,
                                                      const std::vector<SampleWindow>& windows) {
  std::vector<std::vector<std::size_t>> groups(windows.size());
  const bool by_id = !windows.empty() && std::all_of(windows.begin(), windows.end(),
                                                     [](const SampleWindow& w) { return w.has_ids(); });
  for (std::size_t r = 0; r < records.size(); ++r) {
    if (by_id) {
      const uint32_t id = records[r].correlation_id;
      auto it = std::upper_bound(windows.begin(), windows.end(), id,
                                 [](uint32_t v, const SampleWindow& w) { return v <= w.corr_after; });
      if (it == windows.begin()) continue;
      --it;
      if (id > it->corr_after && id <= it->corr_last) groups[static_cast<std::size_t>(it - windows.begin())].push_back(r);
      continue;
    }
    const uint64_t start = records[r].start_ns;
    // The last window that begins at or before this start is the only candidate.
    auto it = std::upper_bound(windows.begin(), windows.end(), start,
                               [](uint64_t t, const SampleWindow& w) { return t < w.begin_ns; });
    if (it == windows.begin()) continue;
    --it;
    if (start <= it->end_ns) groups[static_cast<std::size_t>(it - windows.begin())].push_back(r);
  }
  for (auto& g : groups) {
    std::stable_sort(g.begin(), g.end(),
                     [&](std::size_t a, std::size_t b) { return records[a].start_ns < records[b].start_ns; });
  }
  return groups;
}

bool groups_look_complete(const std::vector<std::vector<std::size_t>>& groups) {
  if (groups.empty()) return true;
  const std::size_t n = groups.front().size();
  if (n == 0) return false;
  return std::all_of(groups.begin(), groups.end(), [n](const auto& g) { return g.size() == n; });
}

std::vector<Sample> samples_from_groups(const std::vector<KernelRecord>& records,
                                        const std::vector<std::vector<std::size_t>>& groups) {
  std::vector<Sample> samples(groups.size());
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto& g = groups[i];
    if (g.empty()) {
      throw runtime_error("sample " + std::to_string(i) +
                          " saw no kernel: the variant's launch enqueued no kernel on the timing stream (CUPTI "
                          "found no kernel record between the sample's start and end)");
    }
    uint64_t first = UINT64_MAX, last = 0;
    for (std::size_t r : g) {
      const KernelRecord& k = records[r];
      const std::string name = k.name ? *k.name : std::string("<unnamed kernel>");
      if (k.start_ns == 0 || k.end_ns < k.start_ns) {
        throw runtime_error("CUPTI returned an incomplete record for kernel " + name + " in sample " +
                            std::to_string(i) + " (start " + std::to_string(k.start_ns) + ", end " +
                            std::to_string(k.end_ns) + ")");
      }
      first = std::min(first, k.start_ns);
      last = std::max(last, k.end_ns);
      samples[i].kernels.push_back({name, static_cast<double>(k.end_ns - k.start_ns) * 1e-9});
    }
    samples[i].seconds = static_cast<double>(last - first) * 1e-9;
  }
  return samples;
}

std::string demangle_kernel_name(const char* raw) {
  if (!raw) return "<unnamed kernel>";
  int status = 0;
  char* out = abi::__cxa_demangle(raw, nullptr, nullptr, &status);
  if (status != 0 || !out) {
    std::free(out);
    return raw;
  }
  std::string s(out);
  std::free(out);
  return s;
}

}  // namespace gdn

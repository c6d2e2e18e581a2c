// Turning kernel activity records (CUPTI) into samples. A kernel belongs to the sample whose
// correlation-id range holds the id of the API call that launched it (exact: the launch calls
// are the runtime API records that started inside the sample's host-side window). Without ids, the sample whose host-side window
// [begin, end] holds the kernel's GPU start: GPU timestamps are mapped to the host clock with some
// skew, so a helper kernel finishing just before a window may then land in it. Pure host code,
// unit-tested without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "timing/timer.h"

namespace gdn {

struct KernelRecord {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t correlation_id = 0;
  uint32_t stream_id = 0;
  const std::string* name = nullptr;  // interned by the collector; outlives the record
};

// Timestamps (same clock as the records) taken after the pre-sample synchronise and after the
// post-sample one. Windows are in increasing order and do not overlap.
struct SampleWindow {
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  // Correlation ids: the last one issued before the sample's launch (exclusive) and the last one
  // issued by it (inclusive). Both 0 when unknown: then the time window decides.
  uint32_t corr_after = 0;
  uint32_t corr_last = 0;
  bool has_ids() const { return corr_last > corr_after; }
};

// A CUDA runtime API call seen by CUPTI: its host start time and correlation id.
struct ApiRecord {
  uint64_t start_ns = 0;
  uint32_t correlation_id = 0;
};

// Sets each window's correlation-id range from the API calls that started inside it (host
// timestamps on both sides, so no GPU clock skew is involved). Windows without calls keep 0.
void assign_correlation_ranges(std::vector<SampleWindow>& windows, const std::vector<ApiRecord>& api);

// For each window, the indices of the records whose start lies in it, in start order. Records
// outside every window (cache flush, clock stamps, warm-ups) are left out.
std::vector<std::vector<std::size_t>> group_by_window(const std::vector<KernelRecord>& records,
                                                      const std::vector<SampleWindow>& windows);

// True when every window holds at least one kernel and all hold the same number (a sign that no
// record is still missing).
bool groups_look_complete(const std::vector<std::vector<std::size_t>>& groups);

// One Sample per group: seconds = last end - first start (gaps between kernels count), kernels =
// each kernel's own duration. Throws gdn::runtime_error for a window without kernels (the
// variant launched nothing) or an incomplete record (zero or reversed timestamps).
std::vector<Sample> samples_from_groups(const std::vector<KernelRecord>& records,
                                        const std::vector<std::vector<std::size_t>>& groups);

// "ns::kernel<128>(float*)" for an Itanium-mangled name; the input unchanged otherwise.
std::string demangle_kernel_name(const char* raw);

}  // namespace gdn

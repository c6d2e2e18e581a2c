// Turning kernel activity records (CUPTI) into samples: a kernel belongs to the sample whose
// host-side window [begin, end] holds its GPU start time. Pure host code, so it is unit-tested
// without a GPU.
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
};

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

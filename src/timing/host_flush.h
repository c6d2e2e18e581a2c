// The host's cold-cache flush (docs/method.md 7): before every cold sample the CPU variant's data
// leaves every cache level of every core, so the sample reads it from memory.
//
// Where the CPU lets user code flush cache lines (x86-64 clflushopt or clflush, arm64 dc civac),
// the given buffers are flushed line by line, split over the workers: exact whatever cache
// topology the machine (or a VM) reports, and its cost grows with the buffers, not with the
// cache. Elsewhere every worker overwrites, then reads back, its share of a buffer of twice the
// host's cache bytes. docs/method.md 7.4 has the measurements behind the choice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "timing/host_workers.h"

namespace gdn {

// Whether this CPU has a user-space cache-line flush (else HostCacheFlush overwrites).
bool has_cache_line_flush();

struct HostRange {
  const void* data;
  std::size_t bytes;
};

class HostCacheFlush {
 public:
  // cache_bytes: every distinct cache of the host together (HostInfo::cache_bytes; 0 unknown),
  // used only by the overwrite. `overwrite` forces it where line flushes exist (tests).
  HostCacheFlush(HostWorkers& workers, uint64_t cache_bytes, bool overwrite = !has_cache_line_flush());
  ~HostCacheFlush();

  void flush(const std::vector<HostRange>& ranges);
  // What flush() does here, for the report: "clflushopt of the case's buffers (N workers)", ...
  std::string method() const;

 private:
  HostWorkers& workers_;
  bool overwrite_;
  // Fallback only: each worker's share of the overwrite buffer, allocated by that worker.
  std::vector<std::unique_ptr<uint64_t[]>> slices_;
  std::size_t slice_words_ = 0;
};

// Flushes [data, data + bytes) from every cache of every core, here on the calling thread.
// Only where has_cache_line_flush().
void flush_cache_lines(const void* data, std::size_t bytes);

}  // namespace gdn

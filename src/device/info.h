// What the report says about the machine: the host, and each CUDA device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gdn {

struct HostInfo {
  std::string hostname;
  std::string cpu_model;
  int logical_cores = 0;
  uint64_t memory_bytes = 0;
  uint64_t llc_bytes = 0;    // last-level cache of cpu0, 0 if unknown
  std::string os;            // kernel release
  uint64_t cache_bytes = 0;  // every distinct data/unified cache of the host added up, 0 if unknown
};

struct DeviceInfo {
  int index = -1;
  std::string name;
  std::string uuid;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  uint64_t l2_bytes = 0;
  uint64_t memory_bytes = 0;
  uint64_t memory_free_bytes = 0;
  int sm_clock_max_mhz = 0;
  int mem_clock_mhz = 0;
  int mem_bus_width = 0;
  std::string driver_version;   // "13.0"
  std::string runtime_version;  // "13.0"
  std::string cupti_version;    // "" when CUPTI could not be loaded
  int arch() const { return cc_major * 10 + cc_minor; }
};

HostInfo query_host();
// CUDA devices visible here; empty (and `why` set) when there is no driver or device.
std::vector<DeviceInfo> query_devices(std::string* why = nullptr);

}  // namespace gdn

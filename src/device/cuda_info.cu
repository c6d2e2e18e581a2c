// query_devices (device/info.h): what the report says about each visible CUDA device.
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "core/cuda_check.h"
#include "device/cuda_device.h"
#include "device/cuda_uuid.h"
#include "device/info.h"
#include "timing/cupti_loader.h"

namespace gdn {
namespace {

// 13000 -> "13.0", 12080 -> "12.8".
std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

int attribute(cudaDeviceAttr attr, int device) {
  int v = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&v, attr, device));
  return v;
}

std::string driver_version_text() {
  int v = 0;
  return cudaDriverGetVersion(&v) == cudaSuccess ? cuda_version_text(v) : "";
}

std::string runtime_version_text() {
  int v = 0;
  return cudaRuntimeGetVersion(&v) == cudaSuccess ? cuda_version_text(v) : "";
}

}  // namespace

DeviceInfo describe_cuda_device(int index) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  DeviceInfo d;
  d.index = index;
  d.name = prop.name;
  d.uuid = cuda_uuid_text(prop.uuid);
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.sm_count = prop.multiProcessorCount;
  d.l2_bytes = static_cast<uint64_t>(prop.l2CacheSize);
  d.memory_bytes = static_cast<uint64_t>(prop.totalGlobalMem);
  // CUDA 13 removed the clock fields from cudaDeviceProp; the attributes remain (kHz).
  d.sm_clock_max_mhz = attribute(cudaDevAttrClockRate, index) / 1000;
  d.mem_clock_mhz = attribute(cudaDevAttrMemoryClockRate, index) / 1000;
  d.mem_bus_width = attribute(cudaDevAttrGlobalMemoryBusWidth, index);
  d.driver_version = driver_version_text();
  d.runtime_version = runtime_version_text();
  d.cupti_version = cupti_version_string();

  int previous = 0;
  CUDA_CHECK(cudaGetDevice(&previous));
  CUDA_CHECK(cudaSetDevice(index));  // free memory needs a context on this device
  size_t free_bytes = 0, total_bytes = 0;
  const cudaError_t err = cudaMemGetInfo(&free_bytes, &total_bytes);
  cudaSetDevice(previous);
  if (err != cudaSuccess) throw_cuda_error(err, "cudaMemGetInfo", __FILE__, __LINE__);
  d.memory_free_bytes = free_bytes;
  return d;
}

std::vector<DeviceInfo> query_devices(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    std::string hint;
    if (err == cudaErrorInsufficientDriver) hint = "; no NVIDIA driver is loaded, or it is older than the CUDA runtime";
    if (why) *why = "no CUDA device: cudaGetDeviceCount failed with " + cuda_error_text(err) + hint;
    return {};
  }
  if (count == 0) {
    if (why) *why = "no CUDA device: the driver reports 0 devices";
    return {};
  }
  std::vector<DeviceInfo> out;
  out.reserve(count);
  for (int i = 0; i < count; ++i) out.push_back(describe_cuda_device(i));
  if (why) why->clear();
  return out;
}

}  // namespace gdn

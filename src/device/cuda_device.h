// One CUDA device's DeviceInfo (device/info.h), for callers that need a single device without
// touching the others (query_devices creates a context on every device to read free memory).
#pragma once

#include "device/info.h"

namespace gdn {

// Throws gdn::runtime_error when the device cannot be queried.
DeviceInfo describe_cuda_device(int index);

}  // namespace gdn

// The measured peaks a roofline percentage refers to (docs/method.md 5): device-to-device copy
// bandwidth and the dense bf16 tensor-core rate, measured on the device itself and cached per
// device UUID in $XDG_CACHE_HOME/gdnbench/calibration.json (default ~/.cache/gdnbench/).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>

namespace gdn {

struct Calibration {
  std::string uuid, device_name;
  double copy_bytes_per_s = 0;  // bytes read + written per second
  double bf16_flops_per_s = 0;  // NaN where the device has no bf16 tensor cores (sm_75)
  std::string measured_at;      // UTC, ISO 8601
  std::string mma_method;       // "wgmma m64n256k16", "mma.sync m16n8k16" or "none"
  double copy_buffer_bytes = 0; // size of each copy buffer used
};

// Measures both peaks now (about a second on an H200; needs ~4 GiB of free device memory for
// the copy, less is used when less is free). Throws gdn::runtime_error on CUDA failures.
Calibration calibrate(int device);

// The cached calibration of this device, else a fresh one (then cached). force: always measure.
// from_cache (optional) tells which happened. A cache that cannot be written is not an error.
Calibration load_or_calibrate(int device, bool force, bool* from_cache = nullptr);

nlohmann::json to_json(const Calibration& c);
// Throws gdn::input_error when a required field is missing or of the wrong type.
Calibration calibration_from_json(const nlohmann::json& j);

// The cache file path ($XDG_CACHE_HOME or $HOME/.cache, then gdnbench/calibration.json).
std::string calibration_cache_path();
// The cached entry for a device UUID, if any (an unreadable cache counts as empty).
std::optional<Calibration> load_cached_calibration(const std::string& uuid);
// Adds or replaces the entry for c.uuid; false (and `why`) when the file cannot be written.
bool save_calibration(const Calibration& c, std::string* why = nullptr);

}  // namespace gdn

// The calibration cache: one JSON file, one entry per device UUID, so `gdnbench run` does not
// re-measure peaks on every invocation.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "device/calibrate.h"
#include "core/cuda_check.h"
#include "device/cuda_uuid.h"

namespace gdn {
namespace {

constexpr int kCacheVersion = 1;

double number_or_nan(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!j.at(key).is_number()) throw input_error(std::string("calibration field '") + key + "' is not a number");
  return j.at(key).get<double>();
}

std::string string_field(const nlohmann::json& j, const char* key, bool required) {
  if (!j.contains(key)) {
    if (required) throw input_error(std::string("calibration lacks the field '") + key + "'");
    return "";
  }
  if (!j.at(key).is_string()) throw input_error(std::string("calibration field '") + key + "' is not a string");
  return j.at(key).get<std::string>();
}

// The whole cache file, or an empty cache when it is missing or unreadable.
nlohmann::json read_cache_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json::object();
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return nlohmann::json::object();
  return j;
}

}  // namespace

nlohmann::json to_json(const Calibration& c) {
  // NaN (no bf16 tensor cores) is written as null by nlohmann and read back as NaN.
  return nlohmann::json{{"uuid", c.uuid},
                        {"device_name", c.device_name},
                        {"copy_bytes_per_s", c.copy_bytes_per_s},
                        {"bf16_flops_per_s", c.bf16_flops_per_s},
                        {"measured_at", c.measured_at},
                        {"mma_method", c.mma_method},
                        {"copy_buffer_bytes", c.copy_buffer_bytes}};
}

Calibration calibration_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw input_error("calibration entry is not a JSON object");
  Calibration c;
  c.uuid = string_field(j, "uuid", true);
  c.device_name = string_field(j, "device_name", false);
  c.copy_bytes_per_s = number_or_nan(j, "copy_bytes_per_s");
  c.bf16_flops_per_s = number_or_nan(j, "bf16_flops_per_s");
  c.measured_at = string_field(j, "measured_at", false);
  c.mma_method = string_field(j, "mma_method", false);
  c.copy_buffer_bytes = j.contains("copy_buffer_bytes") ? number_or_nan(j, "copy_buffer_bytes") : 0.0;
  return c;
}

std::string calibration_cache_path() {
  std::filesystem::path dir;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (xdg && *xdg) {
    dir = xdg;
  } else if (home && *home) {
    dir = std::filesystem::path(home) / ".cache";
  } else {
    dir = std::filesystem::temp_directory_path();
  }
  return (dir / "gdnbench" / "calibration.json").string();
}

std::optional<Calibration> load_cached_calibration(const std::string& uuid) {
  const nlohmann::json cache = read_cache_file(calibration_cache_path());
  if (!cache.contains("devices") || !cache["devices"].is_object() || !cache["devices"].contains(uuid)) return std::nullopt;
  try {
    Calibration c = calibration_from_json(cache["devices"][uuid]);
    // A usable entry has a positive copy bandwidth; anything else is re-measured.
    if (c.uuid != uuid || !(c.copy_bytes_per_s > 0)) return std::nullopt;
    return c;
  } catch (const Error&) {
    return std::nullopt;
  }
}

bool save_calibration(const Calibration& c, std::string* why) {
  const std::filesystem::path path = calibration_cache_path();
  nlohmann::json cache = read_cache_file(path.string());
  cache["version"] = kCacheVersion;
  if (!cache.contains("devices") || !cache["devices"].is_object()) cache["devices"] = nlohmann::json::object();
  cache["devices"][c.uuid] = to_json(c);

  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  // Write a temporary file and rename it, so a concurrent reader never sees half a file.
  const std::filesystem::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    out << cache.dump(2) << "\n";
    if (!out.good()) {
      if (why) *why = "cannot write " + tmp.string();
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    if (why) *why = "cannot replace " + path.string() + ": " + ec.message();
    std::filesystem::remove(tmp, ec);
    return false;
  }
  return true;
}

Calibration load_or_calibrate(int device, bool force, bool* from_cache) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  const std::string uuid = cuda_uuid_text(prop.uuid);
  if (!force) {
    if (auto cached = load_cached_calibration(uuid)) {
      if (from_cache) *from_cache = true;
      return *cached;
    }
  }
  Calibration c = calibrate(device);
  save_calibration(c);  // a read-only cache directory only costs a re-measurement next time
  if (from_cache) *from_cache = false;
  return c;
}

}  // namespace gdn

#include "timing/cupti_loader.h"

#include <dlfcn.h>
#include <glob.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace gdn {
namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

void add_dir(std::vector<std::string>& out, const std::string& dir) {
  if (dir.empty()) return;
  out.push_back(dir + "/libcupti.so.13");
  out.push_back(dir + "/libcupti.so");
}

void add_glob(std::vector<std::string>& out, const std::string& pattern) {
  glob_t g{};
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
}

// Where libcupti may live: the override, the loader's own search (sonames), the toolkit layouts
// (CUDA 13 puts it in lib/, older ones in extras/CUPTI/lib64), then pip's nvidia wheels.
std::vector<std::string> candidate_paths() {
  std::vector<std::string> out;
  const std::string override_path = env_or_empty(kCuptiPathEnv);
  if (!override_path.empty()) {
    std::error_code ec;
    if (std::filesystem::is_directory(override_path, ec)) {
      add_dir(out, override_path);
    } else {
      out.push_back(override_path);
    }
  }
  out.push_back("libcupti.so.13");
  out.push_back("libcupti.so");
  std::vector<std::string> roots;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"}) {
    const std::string r = env_or_empty(var);
    if (!r.empty()) roots.push_back(r);
  }
  roots.push_back("/usr/local/cuda");
  add_glob(roots, "/usr/local/cuda-13*");
  for (const auto& root : roots) {
    for (const char* sub : {"lib64", "lib", "extras/CUPTI/lib64", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"}) {
      add_dir(out, root + "/" + sub);
    }
  }
  std::vector<std::string> site_dirs;
  const std::string venv = env_or_empty("VIRTUAL_ENV");
  if (!venv.empty()) add_glob(site_dirs, venv + "/lib/python3*/site-packages");
  const std::string home = env_or_empty("HOME");
  if (!home.empty()) add_glob(site_dirs, home + "/.local/lib/python3*/site-packages");
  add_glob(site_dirs, "/usr/local/lib/python3*/dist-packages");
  add_glob(site_dirs, "/usr/local/lib/python3*/site-packages");
  add_glob(site_dirs, "/usr/lib/python3*/dist-packages");
  add_glob(site_dirs, "/opt/conda/lib/python3*/site-packages");
  for (const auto& site : site_dirs) {
    add_dir(out, site + "/nvidia/cu13/lib");
    add_dir(out, site + "/nvidia/cuda_cupti/lib");
  }
  return out;
}

template <class Fn>
bool resolve(void* lib, const char* symbol, Fn& fn, std::string& missing) {
  fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
  if (!fn) missing += std::string(missing.empty() ? "" : ", ") + symbol;
  return fn != nullptr;
}

// Fills `api` from an opened library; "" on success, else the missing symbols.
std::string resolve_all(void* lib, CuptiApi& api) {
  std::string missing;
  resolve(lib, "cuptiGetVersion", api.get_version, missing);
  resolve(lib, "cuptiGetResultString", api.get_result_string, missing);
  resolve(lib, "cuptiGetTimestamp", api.get_timestamp, missing);
  resolve(lib, "cuptiActivityEnable", api.activity_enable, missing);
  resolve(lib, "cuptiActivityDisable", api.activity_disable, missing);
  resolve(lib, "cuptiActivityRegisterCallbacks", api.activity_register_callbacks, missing);
  resolve(lib, "cuptiActivityGetNextRecord", api.activity_get_next_record, missing);
  resolve(lib, "cuptiActivityGetNumDroppedRecords", api.activity_get_num_dropped_records, missing);
  resolve(lib, "cuptiActivityFlushAll", api.activity_flush_all, missing);
  return missing;
}

struct LoadResult {
  CuptiApi api;
  bool ok = false;
  std::string why;
};

LoadResult load_once() {
  LoadResult result;
  std::string tried;
  for (const auto& path : candidate_paths()) {
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      tried += "\n  " + path;
      continue;
    }
    const std::string missing = resolve_all(lib, result.api);
    if (!missing.empty()) {
      tried += "\n  " + path + " (lacks " + missing + ")";
      dlclose(lib);
      continue;
    }
    result.api.library_path = path;
    result.ok = true;
    return result;  // kept open for the life of the process
  }
  result.why = std::string("libcupti could not be loaded (set ") + kCuptiPathEnv + " to its path); tried:" + tried;
  return result;
}

const LoadResult& cached_load() {
  static const LoadResult result = load_once();
  return result;
}

}  // namespace

std::string CuptiApi::result_text(CUptiResult r) const {
  const char* s = nullptr;
  if (get_result_string && get_result_string(r, &s) == CUPTI_SUCCESS && s) return s;
  return "CUptiResult " + std::to_string(static_cast<int>(r));
}

bool cupti_disabled_by_env() {
  const std::string v = env_or_empty(kDisableCuptiEnv);
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

const CuptiApi* load_cupti(std::string* why) {
  if (cupti_disabled_by_env()) {
    if (why) *why = std::string("CUPTI disabled by ") + kDisableCuptiEnv + "=" + env_or_empty(kDisableCuptiEnv);
    return nullptr;
  }
  const LoadResult& r = cached_load();
  if (!r.ok) {
    if (why) *why = r.why;
    return nullptr;
  }
  return &r.api;
}

std::string cupti_version_string() {
  const CuptiApi* api = load_cupti();
  if (!api) return "";
  uint32_t v = 0;
  if (api->get_version(&v) != CUPTI_SUCCESS) return "";
  // From CUDA 13 the version is xxyyzz (13.0 update 1 = 130001); before it, a small API number.
  if (v >= 10000) return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  return "api v" + std::to_string(v);
}

}  // namespace gdn

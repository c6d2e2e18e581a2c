#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "device/info.h"

namespace gdn {
namespace {

std::string trim(std::string s) {
  auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

// Value of the first "key : value" line of a /proc file, "" when absent.
std::string proc_field(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon != std::string::npos && trim(line.substr(0, colon)) == key) return trim(line.substr(colon + 1));
  }
  return "";
}

std::string read_line(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return trim(s);
}

// sysfs cache sizes look like "32768K" or "32M".
uint64_t parse_size(const std::string& text) {
  std::size_t used = 0;
  uint64_t v = 0;
  try {
    v = std::stoull(text, &used);
  } catch (...) {
    return 0;
  }
  const std::string unit = trim(text.substr(used));
  if (unit == "K" || unit == "KiB" || unit == "kB") return v << 10;
  if (unit == "M" || unit == "MiB") return v << 20;
  if (unit == "G" || unit == "GiB") return v << 30;
  return v;
}

// Size of the highest cache level cpu0 reports (the largest one if a level has several).
uint64_t last_level_cache_bytes() {
  namespace fs = std::filesystem;
  const fs::path dir = "/sys/devices/system/cpu/cpu0/cache";
  std::error_code ec;
  int best_level = -1;
  uint64_t best = 0;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    int level = 0;
    try {
      level = std::stoi(read_line(entry.path() / "level"));
    } catch (...) {
      continue;
    }
    const uint64_t size = parse_size(read_line(entry.path() / "size"));
    if (size == 0) continue;
    if (level > best_level || (level == best_level && size > best)) best_level = level, best = size;
  }
  return best;
}

// Every distinct data or unified cache of the online CPUs, added up (a cache shared by several
// CPUs counts once): what a whole-machine overwrite must displace.
uint64_t total_cache_bytes() {
  namespace fs = std::filesystem;
  std::set<std::string> seen;
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& cpu : fs::directory_iterator("/sys/devices/system/cpu", ec)) {
    const std::string name = cpu.path().filename().string();
    if (name.size() < 4 || name.rfind("cpu", 0) != 0 || !std::isdigit(static_cast<unsigned char>(name[3]))) continue;
    std::error_code ec2;
    for (const auto& entry : fs::directory_iterator(cpu.path() / "cache", ec2)) {
      if (entry.path().filename().string().rfind("index", 0) != 0) continue;
      const std::string type = read_line(entry.path() / "type");
      if (type != "Data" && type != "Unified") continue;
      const std::string key = read_line(entry.path() / "level") + "|" + type + "|" + read_line(entry.path() / "shared_cpu_list");
      if (seen.insert(key).second) total += parse_size(read_line(entry.path() / "size"));
    }
  }
  return total;
}

uint64_t memory_bytes() {
  // "MemTotal:       131897216 kB"
  const std::string v = proc_field("/proc/meminfo", "MemTotal");
  return parse_size(v.empty() ? "" : v.substr(0, v.find(' ')) + "K");
}

std::string cpu_model() {
  for (const char* key : {"model name", "Model", "Hardware", "cpu model"})
    if (auto v = proc_field("/proc/cpuinfo", key); !v.empty()) return v;
  return "";
}

}  // namespace

HostInfo query_host() {
  HostInfo h;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0) h.hostname = name;
  h.cpu_model = cpu_model();
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  h.logical_cores = online > 0 ? int(online) : int(std::thread::hardware_concurrency());
  h.memory_bytes = memory_bytes();
  h.llc_bytes = last_level_cache_bytes();
  h.cache_bytes = total_cache_bytes();
  struct utsname u {};
  if (uname(&u) == 0) h.os = std::string(u.sysname) + " " + u.release;
  if (h.cpu_model.empty() && !h.os.empty()) h.cpu_model = u.machine;
  return h;
}

}  // namespace gdn

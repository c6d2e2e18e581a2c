// `info` (host and devices) and `calibrate` (this device's copy bandwidth and bf16 MMA rate).
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/errors.h"
#include "device/calibrate.h"
#include "device/info.h"

namespace gdn::cli {
namespace {

int info() {
  auto h = query_host();
  fmt::print("host: {} | {} | {} logical cores | {:.1f} GiB | LLC {:.1f} MiB (all caches {:.1f} MiB) | {}\n",
             h.hostname, h.cpu_model, h.logical_cores, double(h.memory_bytes) / (1 << 30), double(h.llc_bytes) / (1 << 20),
             double(h.cache_bytes) / (1 << 20), h.os);
  std::string why;
  auto devs = query_devices(&why);
  if (devs.empty()) fmt::print("CUDA devices: none ({})\n", why);
  for (auto& d : devs) {
    fmt::print("device {}: {} ({}) sm_{}{} | {} SMs | L2 {:.0f} MiB | {:.1f} GiB ({:.1f} free) | SM clock max {} MHz\n",
               d.index, d.name, d.uuid, d.cc_major, d.cc_minor, d.sm_count, double(d.l2_bytes) / (1 << 20),
               double(d.memory_bytes) / (1 << 30), double(d.memory_free_bytes) / (1 << 30), d.sm_clock_max_mhz);
    fmt::print("  driver {} | runtime {} | CUPTI {}\n", d.driver_version, d.runtime_version,
               d.cupti_version.empty() ? "not loaded" : d.cupti_version);
  }
  return 0;
}

int calibrate_cmd(int device, bool force) {
  // Asked first, so a machine without a GPU gets a sentence instead of a CUDA error.
  std::string why;
  const auto devices = query_devices(&why);
  if (devices.empty()) {
    const std::string prefix = "no CUDA device: ";
    if (why.rfind(prefix, 0) == 0) why.erase(0, prefix.size());
    throw runtime_error(fmt::format("no CUDA device: calibrate measures a GPU's peaks; nothing to do here ({})", why));
  }
  if (device >= int(devices.size()))
    throw input_error(fmt::format("--device {}: this machine has {} CUDA device{} (0 to {})", device, devices.size(),
                                  devices.size() == 1 ? "" : "s", devices.size() - 1));
  auto c = load_or_calibrate(device, force);
  fmt::print("{} ({}): copy bandwidth {:.3f} TB/s (read + write), dense bf16 MMA {:.1f} TFLOP/s  [measured {}]\n",
             c.device_name, c.uuid, c.copy_bytes_per_s / 1e12, c.bf16_flops_per_s / 1e12, c.measured_at);
  return 0;
}

}  // namespace

void add_info(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("info", "Host and CUDA devices");
  cmd->callback([&action] { action = [] { return info(); }; });
}

void add_calibrate(CLI::App& app, Action& action) {
  static int device = 0;
  static bool force = false;
  auto* cmd = app.add_subcommand("calibrate", "Measure (or show the cached) copy bandwidth and bf16 MMA rate of a device");
  cmd->add_option("--device", device, "CUDA device index")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--force", force, "Measure again even if cached");
  cmd->callback([&action] { action = [] { return calibrate_cmd(device, force); }; });
}

}  // namespace gdn::cli

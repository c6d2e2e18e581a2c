#include "compare/gate.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace gdn {
namespace {

// The device models a report's selected cases ran on (skipped cases name no device they ran on).
std::set<std::string> device_models(const RunReport& r, const CompareOptions& opt) {
  std::set<std::string> out;
  for (const auto& c : r.cases)
    if (c.status != CaseStatus::skipped && !c.device.empty() && compare_selects(c.variant, opt)) out.insert(c.device);
  return out;
}

std::string listed(const std::set<std::string>& s) {
  return s.empty() ? std::string("no device (every case skipped)") : fmt::format("{}", fmt::join(s, ", "));
}

// A case both reports hold and the gate judged: by their times, or NEW's failed verification.
bool compared(const CompareRow& r) {
  return r.status == CompareStatus::same || r.status == CompareStatus::faster || r.status == CompareStatus::slower ||
         r.status == CompareStatus::noisy || (r.in_base && r.status == CompareStatus::failed_verification);
}

// The library each plugin variant of a report was loaded from (its records all carry the same).
std::map<std::string, VariantOrigin> plugin_origins(const RunReport& r, const CompareOptions& opt) {
  std::map<std::string, VariantOrigin> out;
  for (const auto& c : r.cases)
    if (c.origin.external() && compare_selects(c.variant, opt)) out.emplace(c.variant, c.origin);
  return out;
}

std::string short_hash(const std::string& sha256) { return sha256.substr(0, 12); }

}  // namespace

void apply_gate(const RunReport& base, const RunReport& next, const CompareOptions& opt, CompareResult& result) {
  auto finding = [&](bool allowed, const std::string& what, const char* flag) {
    if (allowed) result.allowed.push_back(fmt::format("{} (accepted by {})", what, flag));
    else result.refused.push_back(fmt::format("{} ({} accepts it)", what, flag));
  };

  const auto missing = std::count_if(result.rows.begin(), result.rows.end(), [](const CompareRow& r) {
    return r.in_base && r.status == CompareStatus::missing;
  });
  if (missing > 0)
    finding(opt.allow_missing,
            fmt::format("{} case{} of BASE {} no time in NEW (absent, skipped or failed)", missing,
                        missing == 1 ? "" : "s", missing == 1 ? "has" : "have"),
            "--allow-missing");

  for (const auto* side : {&base, &next})
    if (!side->complete)
      finding(opt.allow_incomplete,
              fmt::format("{} is incomplete (\"complete\": false: interrupted, stopped by a fault, or still running)",
                          side == &base ? "BASE" : "NEW"),
              "--allow-incomplete");

  const auto base_devices = device_models(base, opt), new_devices = device_models(next, opt);
  std::set<std::string> gone;
  for (const auto& d : base_devices)
    if (!new_devices.count(d)) gone.insert(d);
  if (!gone.empty())
    finding(opt.allow_device_change,
            fmt::format("device change: BASE ran on {}, NEW on {}", listed(base_devices), listed(new_devices)),
            "--allow-device-change");

  const auto base_plugins = plugin_origins(base, opt);
  for (const auto& [variant, now] : plugin_origins(next, opt)) {
    const auto was = base_plugins.find(variant);
    if (was != base_plugins.end() && was->second.sha256 != now.sha256)
      result.notes.push_back(fmt::format("{}: its library changed (BASE {} sha256 {}, NEW {} sha256 {})", variant,
                                         was->second.path, short_hash(was->second.sha256), now.path,
                                         short_hash(now.sha256)));
  }

  if (std::none_of(result.rows.begin(), result.rows.end(), compared))
    result.refused.push_back("nothing compared: no case of BASE has a time or a failed verification in NEW (no flag "
                             "accepts this)");
}

}  // namespace gdn

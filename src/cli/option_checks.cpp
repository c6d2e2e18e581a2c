#include "cli/option_checks.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <thread>

namespace gdn::cli {
namespace {

constexpr int64_t kMaxSamples = 1'000'000'000;  // the wall-clock cap ends a case long before
constexpr int64_t kMaxWarmup = 10'000;        // launches before timing; also inside --timeout
constexpr int64_t kMaxRepetitions = 1'000;    // passes over the sweep
constexpr double kMaxCaseSeconds = 86'400;    // a day per case
constexpr double kMaxPercent = 100;           // a noise target of more than the median itself means nothing
constexpr double kMaxThresholdPct = 1e6;

// A whole decimal number in [lo, hi]; no sign, exponent or fraction, no silent clamping.
CLI::Validator integer_range(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        int64_t v = 0;
        const char* end = text.data() + text.size();
        auto [p, ec] = std::from_chars(text.data(), end, v);
        if (ec == std::errc::result_out_of_range || (ec == std::errc() && p == end && (v < lo || v > hi)))
          return fmt::format("{} is out of range: an integer from {} to {}", text, lo, hi);
        if (ec != std::errc() || p != end) return fmt::format("{} is not a whole number", text);
        return "";
      },
      "");  // the range is said when a value is refused (docs/cli.md lists them), not in every help line
}

void add(CLI::App* cmd, const char* flag, const CLI::Validator& v) {
  if (CLI::Option* o = cmd->get_option_no_throw(flag)) o->check(v);
}

}  // namespace

int max_threads() {
  const int hw = std::max(1u, std::thread::hardware_concurrency());
  return std::min(1024, 4 * hw);
}

CLI::Validator finite_range(double lo, double hi, bool lo_open) {
  return CLI::Validator(
      [lo, hi, lo_open](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size()) return fmt::format("{} is not a number", text);
        if (!std::isfinite(v)) return fmt::format("{} is not a finite number", text);
        if ((lo_open ? v <= lo : v < lo) || v > hi)
          return fmt::format("{} is out of range: a number in {}{:g}, {:g}]", text, lo_open ? "(" : "[", lo, hi);
        return "";
      },
      "");
}

void check_run_flags(CLI::App* cmd) {
  add(cmd, "--seed", integer_range(0, std::numeric_limits<int64_t>::max()));
  add(cmd, "--device", integer_range(0, 1023));
  add(cmd, "--threads", integer_range(0, max_threads()));
  add(cmd, "--min-samples", integer_range(1, kMaxSamples));
  add(cmd, "--max-samples", integer_range(1, kMaxSamples));
  add(cmd, "--warmup", integer_range(0, kMaxWarmup));
  add(cmd, "--repetitions", integer_range(1, kMaxRepetitions));
  add(cmd, "--max-noise", finite_range(0, kMaxPercent, true));
  add(cmd, "--host-max-noise", finite_range(0, kMaxPercent, true));
  add(cmd, "--min-time", finite_range(0, kMaxCaseSeconds));
  add(cmd, "--timeout", finite_range(0, kMaxCaseSeconds, true));
  add(cmd, "--host-timeout", finite_range(0, kMaxCaseSeconds, true));
  cmd->parse_complete_callback([cmd] {
    const CLI::Option* lo = cmd->get_option_no_throw("--min-samples");
    const CLI::Option* hi = cmd->get_option_no_throw("--max-samples");
    if (lo && hi && hi->as<int64_t>() < lo->as<int64_t>())
      throw CLI::ValidationError("--max-samples", fmt::format("{} is below --min-samples {}", hi->as<int64_t>(),
                                                              lo->as<int64_t>()));
  });
}

void check_compare_flags(CLI::App* cmd) {
  add(cmd, "--threshold", finite_range(0, kMaxThresholdPct, true));
  add(cmd, "--host-threshold", finite_range(0, kMaxThresholdPct, true));
}

}  // namespace gdn::cli

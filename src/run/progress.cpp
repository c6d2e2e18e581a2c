#include "run/progress.h"

#include <cstdio>
#include <fmt/format.h>
#include <unistd.h>

#include "core/terminal.h"

namespace gdn {

Progress::Progress(std::size_t total, bool enabled)
    : total_(total), enabled_(enabled && isatty(fileno(stderr))), start_(std::chrono::steady_clock::now()) {}

std::string format_duration(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", int(s / 60), int(s) % 60);
  return fmt::format("{}h{:02}m", int(s / 3600), (int(s) % 3600) / 60);
}

void Progress::update(std::size_t done, const std::string& what) {
  if (!enabled_) return;
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string eta = done > 0 ? format_duration(elapsed / double(done) * double(total_ - done)) : "?";
  std::string line = fmt::format("[{}/{}] {} elapsed, ~{} left  {}", done + 1, total_, format_duration(elapsed), eta, what);
  // One column short of the width: a line that fills the last column wraps on some terminals, and
  // "\r" then no longer returns to its start. Read each time, so a resized window is followed.
  const std::size_t fit = std::size_t(terminal_columns(fileno(stderr)) - 1);
  if (line.size() > fit) line.resize(fit);
  fmt::print(stderr, "\r\033[K{}", line);
  std::fflush(stderr);
}

void Progress::finish() {
  if (enabled_) fmt::print(stderr, "\r\033[K");
}

}  // namespace gdn

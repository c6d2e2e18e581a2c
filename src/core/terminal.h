// The width that printed tables and the progress line fit. COLUMNS wins when it holds a positive
// number (a user's or a test's explicit choice, as POSIX has it); else the terminal's own width
// when the stream is a terminal; else 120, the width the tables are laid out for (a log, a pipe).
#pragma once

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace gdn {

inline constexpr int kDefaultColumns = 120;
inline constexpr int kMinColumns = 40;  // below this nothing folds usefully

inline int terminal_columns(int fd) {
  int cols = 0;
  if (const char* env = std::getenv("COLUMNS")) cols = std::atoi(env);
  if (cols <= 0 && isatty(fd)) {
    winsize ws{};
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0) cols = ws.ws_col;
  }
  if (cols <= 0) cols = kDefaultColumns;
  return std::max(cols, kMinColumns);
}

}  // namespace gdn

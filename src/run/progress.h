// Progress of a long sweep: "case i of N, elapsed, estimated time left" on a terminal, cut to
// the terminal's width (core/terminal.h); nothing when stderr is a log file.
#pragma once

#include <chrono>
#include <string>

namespace gdn {

class Progress {
 public:
  Progress(std::size_t total, bool enabled);
  void update(std::size_t done, const std::string& what);
  void finish();

 private:
  std::size_t total_;
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
};

std::string format_duration(double seconds);  // "42s", "3m05s", "1h02m"

}  // namespace gdn

// Exit codes (documented in docs/cli.md and the README) and the exceptions that carry them to main().
#pragma once

#include <stdexcept>
#include <string>

namespace gdn {

enum ExitCode : int {
  kExitOk = 0,
  kExitRegression = 1,    // compare found a real regression (or a verification failure in NEW)
  kExitVerifyFailed = 2,  // a variant failed verification
  kExitBadInput = 3,      // bad config, bad flags, unreadable or malformed files
  kExitRuntime = 4,       // CUDA error, kernel fault, I/O failure while running
  // compare could not compare what it was asked to: cases of BASE missing from NEW, an incomplete
  // report, a device change, or nothing compared (docs/ci.md); takes precedence over 1.
  kExitCannotCompare = 5,
};

class Error : public std::runtime_error {
 public:
  Error(int code, const std::string& msg) : std::runtime_error(msg), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

// Bad input: config, flags or files. Message names the file, key and value.
inline Error input_error(const std::string& msg) { return Error(kExitBadInput, msg); }
inline Error runtime_error(const std::string& msg) { return Error(kExitRuntime, msg); }

}  // namespace gdn

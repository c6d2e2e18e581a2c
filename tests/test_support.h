// Small helpers shared by the test files.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/shape.h"

namespace gdn::test {

// A prefill problem of 128 x 128 heads over the given sequence lengths.
inline Shape prefill(std::vector<int64_t> lens, int h_qk, int h_v, Layout layout = Layout::kv) {
  Shape s;
  s.op = OpKind::prefill;
  s.seqlens = std::move(lens);
  s.h_qk = h_qk, s.h_v = h_v;
  s.dk = s.dv = 128;
  s.layout = layout;
  return s;
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A shell command's exit code (-1 when it did not exit normally) and its standard output; the
// command redirects stderr itself where the caller wants it (" 2>&1").
struct ShellResult {
  int code = -1;
  std::string out;
};
inline ShellResult run_shell(const std::string& cmd) {
  ShellResult r;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf;
  while (p && fgets(buf.data(), int(buf.size()), p)) r.out += buf.data();
  const int status = p ? pclose(p) : -1;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Sets an environment variable for one scope, restoring the old value (or its absence) after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

}  // namespace gdn::test

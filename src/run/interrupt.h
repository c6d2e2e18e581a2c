// Ctrl-C during `run` and `verify`. The first stops the sweep after the current case and says so
// at once, with how long that case may still take; the second leaves at once with exit 130 (the
// report on disk, rewritten after every case, already holds every finished case). The handler
// reads atomics and calls clock_gettime and write(2) only: all async-signal-safe.
#pragma once

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <ctime>

#include "run/runner.h"

namespace gdn::interrupt {

// What the runner publishes about the case in progress.
inline std::atomic<int64_t> timing_deadline_ns{0};  // CLOCK_MONOTONIC; 0: not timing now
inline std::atomic<int> timing_cap_s{0};            // the case's --timeout still to come; 0: none
inline std::atomic<bool> verifying{false};          // the case verifies before it times

// Set once by install().
inline bool silent = false;              // an --isolate child: its parent speaks
inline bool keeps_report = false;        // --json given
inline bool stderr_is_terminal = false;  // clear a progress line before speaking

inline int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

inline void say(const char* text) {
  if (silent) return;
  ssize_t ignored = write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

// Appends `v` in decimal at `out` (a signal handler has no snprintf).
inline char* put_number(char* out, int64_t v) {
  char digits[24];
  int n = 0;
  do digits[n++] = char('0' + v % 10), v /= 10;
  while (v > 0);
  while (n) *out++ = digits[--n];
  return out;
}

inline char* put(char* out, const char* text) {
  while (*text) *out++ = *text++;
  return out;
}

inline void on_sigint(int) {
  if (g_interrupted.exchange(true)) {
    say(keeps_report ? "\ngdnbench: stopped now; the report keeps every finished case\n" : "\ngdnbench: stopped now\n");
    _exit(130);
  }
  char buf[256];
  char* p = put(buf, stderr_is_terminal ? "\r\033[K" : "");
  p = put(p, "gdnbench: Ctrl-C: stopping after the current case (");
  const int64_t deadline = timing_deadline_ns.load(), cap = timing_cap_s.load();
  if (deadline > 0) {
    const int64_t left_ns = deadline - monotonic_ns();
    // Whole seconds, rounded up, plus one for the sample in flight and the bookkeeping.
    p = put_number(p, (left_ns > 0 ? (left_ns + 999999999) / 1000000000 : 0) + 1);
    p = put(p, " s left at most");
  } else if (cap > 0) {
    p = put(p, verifying.load() ? "it verifies, then times for " : "it times for ");
    p = put_number(p, cap);
    p = put(p, " s at most");
  } else {
    p = put(p, "it verifies");
  }
  p = put(p, "); Ctrl-C again to stop now\n");
  *p = '\0';
  say(buf);
}

// For the run and verify commands only: elsewhere Ctrl-C keeps its default (end at once).
inline void install(bool quiet_child, bool json_given) {
  silent = quiet_child;
  keeps_report = json_given;
  stderr_is_terminal = isatty(STDERR_FILENO);
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // a read or a wait in progress goes on
  sigaction(SIGINT, &sa, nullptr);
}

// The runner's side: a case starts (its timing cap and whether it verifies first), its timing
// starts, the case ends.
inline void case_started(double timeout_s, bool verify_first, bool will_time) {
  timing_deadline_ns = 0;
  verifying = verify_first;
  timing_cap_s = will_time ? int(timeout_s + 0.999) : 0;
}
inline void timing_started(double timeout_s) { timing_deadline_ns = monotonic_ns() + int64_t(timeout_s * 1e9); }
inline void case_ended() { timing_deadline_ns = 0, timing_cap_s = 0, verifying = false; }

}  // namespace gdn::interrupt

// Every numeric flag's allowed range, in one table: finite (CLI11's PositiveNumber lets NaN and
// inf through, and a NaN threshold or noise target switches a check off), in range (a billion
// warm-up launches or a million threads are refused, not tried), and consistent with the flags
// beside it (--max-samples >= --min-samples). A bad value exits 3 naming the flag and the value.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace gdn::cli {

// The most --threads a host may be asked for: 4 x its hardware threads, at most 1024.
int max_threads();

// Range checks for whichever of the run/verify flags `cmd` declares (call after adding them),
// and the checks between flags once the subcommand is parsed.
void check_run_flags(CLI::App* cmd);
// compare's --threshold and --host-threshold.
void check_compare_flags(CLI::App* cmd);

// The check behind every real-valued flag: a finite number in [lo, hi] ((lo, hi] when lo_open).
CLI::Validator finite_range(double lo, double hi, bool lo_open = false);

}  // namespace gdn::cli

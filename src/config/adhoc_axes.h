// Ad-hoc sweeps from the command line, as nvbench's axes: `--op decode -a batch=1,8,64
// -a heads=16/32`. The flags become the same config tree a YAML file with one case would give
// and go through the same validation (config.cpp), so a bad value reads like a config error that
// names the flag instead of FILE:LINE.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace gdn {

// One `-a KEY=VALUE[,VALUE...]` per entry of `axes`; values split on ',' (on ';' for `plan`,
// whose specs hold commas). KEY is an axis of the table (core/axes.h) or one of the case keys
// verify_heads and threshold; `--op` and `--variant` give the op and the variant glob ("" = every
// variant). The sweep's name is the canonical command line (flags in the axis table's order) and
// its hash that name's, so the same flags in any order make the same sweep. input_error (exit 3)
// naming the flag on any problem.
SweepConfig adhoc_config(const std::string& op, const std::vector<std::string>& axes, const std::string& variant);

// The list separator of an axis's values on the command line: ';' for plan, ',' otherwise.
char adhoc_value_separator(const std::string& key);

}  // namespace gdn

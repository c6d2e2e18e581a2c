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

// `--config FILE -a KEY=VALUES...`: the file's sweep with each flag's axis set to its values in
// every case whose op takes that axis (replacing the case's own or its default's). The name is
// the path and the flags; the hash covers the file's bytes and the flags. Errors name the flag
// for an override and FILE:LINE for the rest; a flag that no case takes is refused.
SweepConfig config_with_axes(const std::string& path, const std::vector<std::string>& axes);

// The list separator of an axis's values on the command line: ';' for plan, ',' otherwise.
char adhoc_value_separator(const std::string& key);

}  // namespace gdn

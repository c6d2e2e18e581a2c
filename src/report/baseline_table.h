// `run --baseline VARIANT`: one variant against every other at each point, whoever wrote them
// (built in, a plugin, a peer's report): the same op, shape and mode, verified, timed and on the
// same device. A view of the records; the default tables are untouched.
#pragma once

#include <string>
#include <vector>

#include "report/record.h"

namespace gdn {

// "" when `baseline` is empty or names a variant this run can have (a registered one, plugins
// loaded, or a --peer report's), else the message for its exit 3.
std::string check_baseline(const std::string& baseline, const std::vector<CaseRecord>& peer_cases);

// One section per op the baseline has measured records of: its median, each other variant's,
// the fastest other and baseline / best (> 1: another variant is faster), then the geometric
// mean over the points. "" when the baseline has no measured record.
std::string format_baseline_table(const std::string& baseline, const std::vector<CaseRecord>& records,
                                  std::size_t width = 120);

}  // namespace gdn

// Ours against a peer's report (FLA through scripts/peers), row by row: the same op, shape
// and mode measured in one run on one device.
#pragma once

#include <string>
#include <vector>

#include "report/record.h"

namespace gdn {

std::string format_peer_table(const std::vector<CaseRecord>& ours, const std::vector<CaseRecord>& peer);

}  // namespace gdn

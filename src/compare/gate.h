// What makes `compare` refuse to pass (exit 5, docs/ci.md): a gate that compared less than it was
// asked to is no gate. Cases of BASE missing from NEW, a report that says "complete": false, a
// device model of BASE that NEW did not run on, and nothing compared at all. The first three have
// an allow flag; nothing compared never passes.
#pragma once

#include "compare/compare.h"

namespace gdn {

// Fills result.refused and result.allowed from the two reports and the rows already classified.
void apply_gate(const RunReport& base, const RunReport& next, const CompareOptions& opt, CompareResult& result);

}  // namespace gdn

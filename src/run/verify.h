// Checking a problem's outputs against the fp64 reference (docs/method.md 4).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/op.h"
#include "reference/reference.h"
#include "report/record.h"
#include "run/problem.h"

namespace gdn {

// Which heads/sequences the reference computes: everything, unless the case is above the
// budget (reference state updates) or verify_heads asks for a sample; `scope` describes it.
ref::Selection choose_selection(const Shape& s, std::optional<int> verify_heads, double budget, std::string& scope);

// Per-tensor thresholds: the op's defaults, tightened by the variant's own.
std::vector<Tolerance> effective_tolerances(const Shape& s, const std::vector<Tolerance>& variant_tols);

// Compares problem.results() with the reference; fills the per-tensor checks and pass flag.
Verification check_outputs(const Problem& p, const std::vector<Tolerance>& tols, const ref::Selection& sel,
                           int threads);

// Resets the problem's device tensors (inputs, poisoned outputs), runs the variant once and
// checks it.
Verification verify_problem(const Variant& var, Problem& p, ExecBackend& backend, std::optional<int> verify_heads,
                            double verify_budget, int threads);

}  // namespace gdn

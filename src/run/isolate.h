// --isolate: one (point, variant) per child process, so a fault that poisons a CUDA context or
// kills the process is recorded as that case's error and the sweep goes on.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "report/record.h"

namespace gdn {

// Runs `child_argv` + "--only-point INDEX --json TMP" and returns the record the child wrote.
// When the child leaves none (crash, signal, abort), returns an error record filled by
// `identify` with the exit status as its reason.
CaseRecord run_isolated(const std::vector<std::string>& child_argv, std::size_t index,
                        const std::function<void(CaseRecord&)>& identify);

}  // namespace gdn

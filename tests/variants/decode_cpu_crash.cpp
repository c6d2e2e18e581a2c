// decode/cpu_crash: a TEST-ONLY variant that kills its process (as a kernel fault or a host bug
// would), so the tests can show that `run --isolate` records the case's error and goes on.
// Compiled only into the test executables and gdnbench-testing, never into gdnbench; never
// matched by a wildcard.
#include <cstdlib>

#include "core/registry.h"

namespace gdn {
namespace {

const VariantRegistration reg{Variant{"decode/cpu_crash", OpKind::decode, Backend::cpu, 0, 1000,
                                      "TEST ONLY: aborts the process when launched", nullptr,
                                      [](const Shape&, const TensorSet&, const LaunchContext&) { std::abort(); },
                                      {}, true}};

}  // namespace
}  // namespace gdn

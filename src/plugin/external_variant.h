// Variants made at run time from code gdnbench was not built with: a C plugin today
// (c_plugin.h), and any later kind (a Python function) the same way. What they share: the name
// rules, the check against every variant already registered, and the origin each record keeps.
#pragma once

#include <string>

#include "core/registry.h"

namespace gdn {

// "" when `name` may name an external variant's part (plugin library or entry name), else why
// not: 1..64 bytes of [A-Za-z0-9_.+-], so it reads in a table and never acts as a glob.
std::string check_external_name_part(const std::string& name);

// "plugin:<library>/<entry>": the variant name an external entry is registered under.
std::string external_variant_name(const std::string& kind, const std::string& library, const std::string& entry);

// Registers `v` (its origin set by the caller); input_error (exit 3) naming `source` when a
// variant of that name is already registered. Call it before a config loads: the Registry keeps
// its variants sorted, so an addition moves them, and a loaded config points at them.
void register_external(Variant v, const std::string& source);

}  // namespace gdn

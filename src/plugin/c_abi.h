// The C plugin ABI (include/gdnbench/kernel.h) seen from gdnbench: a Shape and a TensorSet as
// the ABI's plain structs, and one table entry as a Registry variant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/registry.h"
#include "gdnbench/kernel.h"

namespace gdn {

// The shape as the ABI passes it; `seqlens` points into `s`, so `s` must outlive the result.
gdn_shape to_c_shape(const Shape& s);
// The tensors of one launch. `cu_host` is the host copy of cu_seqlens (prefill; else ignored).
gdn_args to_c_args(const gdn_shape& shape, const TensorSet& t, const LaunchContext& ctx, const int32_t* cu_host);

// "" when the entry is well formed (op, backend, arch range, launch, tolerances), else why not.
std::string check_c_entry(const gdn_variant& e);

// The Registry variant that calls the entry: supports and launch through the ABI, a non-zero
// launch result thrown as a runtime error (the case's error) with the plugin's message.
Variant make_c_variant(const gdn_variant& e, const std::string& name, const VariantOrigin& origin);

}  // namespace gdn

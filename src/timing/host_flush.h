// Host last-level-cache flush for cold CPU samples (SPEC section 7).
#pragma once

#include <cstddef>
#include <functional>

namespace gdn {

// Returns a hook that writes, then reads back, a buffer of 2x `llc_bytes` (64 MiB when
// llc_bytes is 0, i.e. unknown). The buffer is allocated once, here, and owned by the hook.
std::function<void()> make_host_cache_flush(std::size_t llc_bytes);

}  // namespace gdn

// FNV-1a 64 over bytes or 64-bit words. Two offset bases are in use: the standard one (config
// hashes) and a truncated one (one digit short) that input seeds and shape-key checksums were
// built on; changing it would change every seeded input, so it keeps its own name.
#pragma once

#include <cstdint>
#include <string_view>

namespace gdn {

inline constexpr uint64_t kFnvOffsetBasis = 14695981039346656037ull;
inline constexpr uint64_t kFnvTruncatedBasis = 1469598103934665603ull;
inline constexpr uint64_t kFnvPrime = 1099511628211ull;

constexpr uint64_t fnv1a_step(uint64_t h, uint64_t word) { return (h ^ word) * kFnvPrime; }

constexpr uint64_t fnv1a(std::string_view bytes, uint64_t basis = kFnvOffsetBasis) {
  uint64_t h = basis;
  for (unsigned char c : bytes) h = fnv1a_step(h, c);
  return h;
}

}  // namespace gdn

// Launch geometry of prefill/sm75_legacy (host-only, no CUDA, C++17): which head sizes it takes
// and how many value columns each warp owns for a given problem. Kept apart from the kernel so
// the choice is testable on a machine without a GPU.
//
// Thread mapping: 8 lanes split K for one value column group (each lane holds K/8 rows), the
// 4 groups of a warp own different columns, and a block of `warps` warps covers
// warps * 4 * cols_per_group consecutive columns of one (sequence, value head).
#pragma once

#include <cstdint>
#include <string>

namespace gdn::legacy {

constexpr int kLanesPerGroup = 8;   // lanes that split K for one column group
constexpr int kGroupsPerWarp = 4;   // 32 / kLanesPerGroup
// Tokens staged in shared memory at a time: 32 halves the per-tile staging cost against 16
// (measured on an H200), but a K = 128 tile then takes ~37-43 KB, one block per SM on GPUs with
// 64 KB of shared memory per SM (Turing), where 16-token tiles (~19-22 KB) keep 2-3 blocks.
constexpr int kTileTokensLarge = 32;
constexpr int kTileTokensSmall = 16;
constexpr int kLargeTileMinSmemPerSm = 96 * 1024;
constexpr int kMaxK = 128;          // K is padded up to 32, 64 or 128 rows
constexpr int kBlockWarps = 4;      // warps per block in the registered variant
// Smallest within-tile cumulative decay for which the kernel keeps the state as S = P X (one
// scalar decay instead of scaling every element per token): X stays below |S| * 2^40.
constexpr float kFastMinDecay = 9.094947e-13f;  // 2^-40

struct Config {
  int cols_per_group = 1;  // C: value columns per 8-lane group (1, 2 or 4)
  int tile_tokens = kTileTokensLarge;  // TS: tokens staged per shared-memory tile
  int warps = kBlockWarps;
  int padded_k = 128;      // K rounded up to 32, 64 or 128
  int block_cols() const { return warps * kGroupsPerWarp * cols_per_group; }
};

inline int padded_k(int K) { return K <= 32 ? 32 : K <= 64 ? 64 : 128; }

// "" when the kernel handles the problem, else why not. Any V works (columns past V are
// masked); K is padded with zero rows, and q/k rows are read 4 elements at a time. The grid is
// (sequences x column blocks, value heads).
inline std::string unsupported_reason(int K, int V, int64_t sequences, int value_heads) {
  if (K < 4 || K > kMaxK || K % 4 != 0) return "K must be a multiple of 4 in [4, 128] (got " + std::to_string(K) + ")";
  if (V < 1) return "V must be >= 1 (got " + std::to_string(V) + ")";
  if (value_heads > 65535) return "h_v must be <= 65535 (got " + std::to_string(value_heads) + ")";
  const int64_t min_block_cols = int64_t(kBlockWarps) * kGroupsPerWarp;
  if (sequences * ((V + min_block_cols - 1) / min_block_cols) > (int64_t(1) << 31) - 1)
    return "too many sequences for one grid (" + std::to_string(sequences) + ")";
  return "";
}

// Columns per group: fatter warps amortise the per-token loads, reductions and the tile
// staging, but each warp's token loop is a latency chain, so the grid must still keep the
// schedulers fed. Measured on an H200 (sm75_legacy/README.md): 4 columns once that still
// gives >= 6 warps per multiprocessor, 2 once it gives >= 3, else 1. smem_per_sm = 0: unknown
// (large tiles).
inline Config choose_config(int K, int V, int64_t sequences, int value_heads, int sm_count, int smem_per_sm = 0) {
  Config c;
  c.padded_k = padded_k(K);
  c.tile_tokens = smem_per_sm == 0 || smem_per_sm >= kLargeTileMinSmemPerSm ? kTileTokensLarge : kTileTokensSmall;
  if (sm_count < 1) sm_count = 1;
  const int64_t columns = sequences * int64_t(value_heads) * V;
  auto warps = [&](int cols) { return columns / (int64_t(kGroupsPerWarp) * cols); };
  c.cols_per_group = warps(4) >= int64_t(6) * sm_count ? 4 : warps(2) >= int64_t(3) * sm_count ? 2 : 1;
  return c;
}

}  // namespace gdn::legacy

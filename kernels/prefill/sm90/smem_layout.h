// Shared-memory layout of the prefill/sm90 kernel, one constexpr description that the host plan
// (bytes to request) and the device code (where each tile lives) both read. C++17, no CUDA.
//
//   q[2], k[2]  [64 tokens][128] 16-bit (f16 once converted), two [64][64] halves of 8 KiB in the 128-byte swizzle
//               (16-byte chunk c of row r stored at chunk c ^ (r % 8)): the layout a TMA copy with
//               SWIZZLE_128B writes and wgmma descriptors read, and conflict-free for ldmatrix
//   ag, pg      [64][64] f16 A_g = Gam * A_r * diag(beta) and P_g = scale Gam * (Q^ K^T), same swizzle
//   v[2]        [64 tokens][block_v + 8] 16-bit, padded rows; each state warp overwrites its own
//               columns of the current stage with its outputs o before copying them out
//   lt          [64][65] fp32: L = StrictLower(diag(beta) K^ K^T), inverted in place into A_r
//   x           [3][16][17] fp32: the inverse's block products
//   scalars     per-token fp32 vectors of the chunk (enum Scalar), then e^G
// Two stages of q, k, v: chunk c + 1 is copied in while chunk c is computed.
#pragma once

namespace gdn::sm90 {

constexpr int kChunk = 64;          // tokens per chunk
constexpr int kHeadDim = 128;       // K = V = 128: the only head size built so far
constexpr int kColsPerWarp = 16;    // value columns a state warp owns (one m16 MMA tile)
constexpr int kQKTileBytes = kChunk * kHeadDim * 2;
constexpr int kHalfTileBytes = kChunk * 64 * 2;  // one [64][64] swizzled 16-bit tile
constexpr int kLtStride = kChunk + 1;            // fp32 row stride of lt (odd: no bank conflicts)
constexpr int kXStride = 17;

// Warps per CTA: one per 16 value columns, at least 4 (the chunk's shared work is split four ways).
constexpr int warps_for(int block_v) { return block_v / kColsPerWarp > 4 ? block_v / kColsPerWarp : 4; }
constexpr int v_row_elems(int block_v) { return block_v + 8; }

// Byte offset of 16-bit element (row, col) of a [rows][64] tile in the 128-byte swizzle: the
// 16-byte piece col / 8 of row r sits at piece (col / 8) ^ (r % 8) of the row's 128 bytes.
constexpr unsigned swizzle128(int row, int col) {
  return unsigned(row) * 128u + (((unsigned(col) >> 3) ^ unsigned(row)) & 7u) * 16u + (unsigned(col) & 7u) * 2u;
}
// Byte offset of (row, col) in a [64][128] q/k tile: two swizzled [64][64] halves.
constexpr unsigned qk_offset(int row, int col) {
  return unsigned(col >> 6) * unsigned(kHalfTileBytes) + swizzle128(row, col & 63);
}

// Per-token vectors of the current chunk (kChunk floats each; rows past the sequence hold 0):
// beta, gam (chunk-local inclusive cumsum of g), rk / rq (inverse L2 norms of k / q, 1 without
// l2norm), ek = rk e^gam (scales U = K S0 into W), eq = scale rq e^gam (scales Q S0 into O),
// eu = rk e^(G - gam) (scales V_d into the state update), g (the decay before the cumsum).
enum Scalar { kBeta, kGam, kRk, kRq, kEk, kEq, kEu, kG, kNumScalars };

struct SmemLayout {
  int q0 = 0, k0 = 0, ag = 0, pg = 0, v0 = 0, v_stage = 0, lt = 0, x = 0, scalars = 0, exp_G = 0, bytes = 0;
  constexpr explicit SmemLayout(int block_v) {
    int at = 0;
    q0 = at, at += 2 * kQKTileBytes;
    k0 = at, at += 2 * kQKTileBytes;
    ag = at, at += kHalfTileBytes;
    pg = at, at += kHalfTileBytes;
    v_stage = kChunk * v_row_elems(block_v) * 2;
    v0 = at, at += 2 * v_stage;
    lt = at, at += kChunk * kLtStride * 4;
    x = at, at += 3 * 16 * kXStride * 4;
    scalars = at, at += kNumScalars * kChunk * 4;
    exp_G = at, at += 16;
    bytes = at;
  }
  // Stage offsets by arithmetic (an array indexed by a run-time stage would live in local memory).
  constexpr int q(int stage) const { return q0 + stage * kQKTileBytes; }
  constexpr int k(int stage) const { return k0 + stage * kQKTileBytes; }
  constexpr int v(int stage) const { return v0 + stage * v_stage; }
};

static_assert(SmemLayout(128).bytes <= 227 * 1024, "one CTA per SM must fit");
static_assert(SmemLayout(128).ag % 1024 == 0 && SmemLayout(128).pg % 1024 == 0, "swizzled tiles are 1 KiB aligned");

}  // namespace gdn::sm90

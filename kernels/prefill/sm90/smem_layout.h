// Shared-memory layout of the prefill/sm90 kernels, one constexpr description that the host plan
// (bytes to request) and the device code (where each tile lives) both read. C++17, no CUDA.
//
//   q[S], k[S]  [64 tokens][128] 16-bit (f16 once converted), two [64][64] halves of 8 KiB in the 128-byte swizzle
//               (16-byte chunk c of row r stored at chunk c ^ (r % 8)): the layout a TMA copy with
//               SWIZZLE_128B writes and wgmma descriptors read, and conflict-free for ldmatrix
//   ag[B], pg[B] [64][64] f16 A_g = Gam * A_r * diag(beta) and P_g = scale Gam * (Q^ K^T), same swizzle
//   v[S]        [64 tokens][block_v + 8] 16-bit, padded rows; each state warp overwrites its own
//               columns of the current stage with its outputs o before copying them out
//   lt          the inverse of L_g = Gam * StrictLower(diag(beta) K^ K^T) (17,408 bytes): a [64][64] f16
//               tile in the same swizzle (L's blocks left of the diagonal, the T blocks the merges
//               read), then the four diagonal 16 x 16 blocks in fp32 (row stride kDiagStride)
//   scalars[B]  per-token fp32 vectors of the chunk (enum Scalar), then e^G (16 bytes)
// Three kernels lay it out (SmemLayout's `kernel`):
//   kPrepKernel   the two-pass schedule's preparation (prep_kernel.cuh): one chunk per CTA (S = B = 1,
//                 no v; L, the inverse's scratch and P_g are written over q and k once the products
//                 are in registers); it writes A_g, P_g and the scalars of every chunk to a workspace
//                 slot (workspace.h)
//   kScanKernel   the two-pass schedule's scan (scan_kernel.cuh): it copies a slot in with q, k and
//                 v, so a stage holds all of them (S = B = 3, one index), a buffer is where a slot's
//                 pieces go, and there is no lt
//   kFusedKernel  the fused schedule (fused_kernel.cuh): a preparation warpgroup prepares chunk
//                 c + 1 into its stage while the state warpgroups advance chunk c; the scan's layout,
//                 offset for offset (the state warpgroups read it as the scan's), then lt
//   kScan2Kernel  the scan with two stages (S = B = 2): prefill/sm80's, whose three stages at
//                 block_v 32 and 64 (172,032 and 184,320 bytes) would not fit an sm_80 CTA's 166,912
//   kScanQ1Kernel the two-stage scan with one q tile (prefill/sm80 on GPUs allowing a block 99 KiB:
//                 sm_86, sm_89, sm_120): a chunk's q is read only by its first products, (Q S)^T, so
//                 the next chunk's q is copied into the same tile once the state warps are past
//                 them (scan_kernel.cuh); 98,304 bytes at block_v 32
#pragma once

namespace gdn::sm90 {

constexpr int kChunk = 64;          // tokens per chunk
constexpr int kHeadDim = 128;       // K = V = 128: the only head size built so far
constexpr int kColsPerWarp = 16;    // value columns a state warp owns (one m16 MMA tile)
constexpr int kQKTileBytes = kChunk * kHeadDim * 2;
constexpr int kHalfTileBytes = kChunk * 64 * 2;  // one [64][64] swizzled 16-bit tile
constexpr int kLtStride = kChunk + 4;            // lt's size: [64][68] fp32
constexpr int kDiagStride = 20;                  // fp32 row stride of lt's diagonal 16 x 16 blocks
static_assert(kHalfTileBytes + 4 * 16 * kDiagStride * 4 <= kChunk * kLtStride * 4, "lt: the f16 tile, then the diagonal blocks");

// The kernels whose shared memory SmemLayout describes (see above).
enum KernelLayout { kScanKernel = 0, kFusedKernel = 1, kPrepKernel = 2, kScan2Kernel = 3, kScanQ1Kernel = 4 };
constexpr int kFusedBlockV = 128;  // the fused kernel's value columns per CTA: two state warpgroups
constexpr int kPrepWarps = 4;      // the scan's load warps, the fused kernel's preparation warpgroup
constexpr int kPrepKernelThreads = 128;
// Preparation CTAs per SM (their launch bounds), both forms: the one per q/k head keeps its
// K K^T / Q K^T tiles in registers across its group's heads in 128 registers without spills (three
// CTAs of 166 registers measured slower: 16/64 4096x8 prep 564 against 514 us).
constexpr int kPrepCtasPerSm = 4;

// Warps per CTA of the scan and the fused kernel: one per 16 value columns (the state warps), then
// kPrepWarps.
constexpr int warps_for(int block_v) { return block_v / kColsPerWarp + kPrepWarps; }
// The fused kernel's threads: the state warpgroups, the preparation warpgroup and the producer.
constexpr int kFusedThreads = (kFusedBlockV / kColsPerWarp + 2 * kPrepWarps) * 32;
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

constexpr int kScalarBytes = kNumScalars * kChunk * 4 + 16;  // the vectors, then e^G and G (padded)

struct SmemLayout {
  int q0 = 0, k0 = 0, ag0 = 0, pg0 = 0, v0 = 0, v_stage = 0, lt = 0, scalars0 = 0, bytes = 0;
  int stages = 3, buffers = 3, q_tiles = 3;
  int slot_stride = 0;  // the scan and the fused kernel: one buffer is [A_g | P_g | scalars], a workspace slot (workspace.h)
  constexpr SmemLayout(int block_v, int kernel)
      : stages(kernel == kPrepKernel ? 1 : kernel == kScan2Kernel || kernel == kScanQ1Kernel ? 2 : 3),
        buffers(stages),
        q_tiles(kernel == kScanQ1Kernel ? 1 : stages) {
    if (kernel == kPrepKernel) {  // one chunk, q and k dead once the products are in registers
      q0 = 0, k0 = kQKTileBytes;
      lt = 0;                                                           // over q (and the start of k)
      pg0 = (kChunk * kLtStride * 4 + 1023) / 1024 * 1024;             // over k
      ag0 = 2 * kQKTileBytes, scalars0 = ag0 + kHalfTileBytes;     // A_g is built while L is read
      v0 = scalars0 + kScalarBytes, bytes = v0;
      return;
    }
    int at = 0;
    q0 = at, at += q_tiles * kQKTileBytes;
    k0 = at, at += stages * kQKTileBytes;
    slot_stride = (2 * kHalfTileBytes + kScalarBytes + 1023) / 1024 * 1024;  // tiles stay 1 KiB aligned
    ag0 = at, pg0 = at + kHalfTileBytes, scalars0 = at + 2 * kHalfTileBytes;
    at += buffers * slot_stride;
    v_stage = block_v > 0 ? kChunk * v_row_elems(block_v) * 2 : 0;
    v0 = at, at += stages * v_stage;
    lt = at, at += kernel == kFusedKernel ? kChunk * kLtStride * 4 : 0;  // the scan reads A_g, it does not invert
    bytes = at;
  }
  // Stage and buffer offsets by arithmetic (an array indexed by a run-time stage would live in
  // local memory).
  constexpr int q(int stage) const { return q0 + stage * (q_tiles > 1 ? kQKTileBytes : 0); }
  constexpr int k(int stage) const { return k0 + stage * kQKTileBytes; }
  constexpr int v(int stage) const { return v0 + stage * v_stage; }
  constexpr int ag(int buf) const { return ag0 + buf * slot_stride; }
  constexpr int pg(int buf) const { return pg0 + buf * slot_stride; }
  constexpr int scalars(int buf) const { return scalars0 + buf * slot_stride; }
  constexpr int exp_G(int buf) const { return scalars(buf) + kNumScalars * kChunk * 4; }
};

static_assert(SmemLayout(64, kScanKernel).bytes <= 227 * 1024, "one scan CTA per SM must fit");
static_assert(SmemLayout(128, kScanKernel).bytes <= 227 * 1024, "one scan CTA per SM must fit at block_v 128 too");
static_assert(SmemLayout(32, kScan2Kernel).bytes <= 163 * 1024, "the two-stage scan at block_v 32 must fit an sm_80 CTA");
static_assert(SmemLayout(64, kScan2Kernel).bytes <= 163 * 1024, "the two-stage scan at block_v 64 must fit an sm_80 CTA");
static_assert(SmemLayout(32, kScanQ1Kernel).bytes + 1024 <= 99 * 1024, "the one-q-tile scan and its static block must fit a 99 KiB CTA");
static_assert(kPrepCtasPerSm * (SmemLayout(0, kPrepKernel).bytes + 1024) <= 228 * 1024, "the preparation CTAs per SM must fit");
static_assert(SmemLayout(0, kPrepKernel).pg0 + kHalfTileBytes <= 2 * kQKTileBytes, "P_g over the k tile");
static_assert(SmemLayout(kFusedBlockV, kFusedKernel).bytes <= 227 * 1024, "one fused CTA per SM must fit");
// The fused kernel's state warpgroups are the scan's and read the scan's offsets.
constexpr bool same_scan_offsets(int bv) {
  const SmemLayout a(bv, kScanKernel), b(bv, kFusedKernel);
  return a.q0 == b.q0 && a.k0 == b.k0 && a.ag0 == b.ag0 && a.pg0 == b.pg0 && a.scalars0 == b.scalars0 && a.v0 == b.v0 &&
         a.v_stage == b.v_stage && a.slot_stride == b.slot_stride && b.lt >= a.bytes;
}
static_assert(same_scan_offsets(kFusedBlockV), "the fused layout is the scan's plus lt");
static_assert(SmemLayout(kFusedBlockV, kFusedKernel).lt % 1024 == 0 && SmemLayout(0, kPrepKernel).lt % 1024 == 0,
              "lt's f16 tile on the swizzle's 1024-byte period");
static_assert(SmemLayout(64, kScanKernel).ag0 % 1024 == 0 && SmemLayout(0, kPrepKernel).ag0 % 1024 == 0 &&
                  SmemLayout(0, kPrepKernel).pg0 % 1024 == 0,
              "swizzled tiles are 1 KiB aligned");

}  // namespace gdn::sm90

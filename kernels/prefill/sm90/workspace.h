// The workspace of kernel v3 (host and device, C++17, no CUDA): the preparation kernel writes, for
// every (chunk, value head), one slot of what the scan reads, and the scan copies it back into
// shared memory in 16-byte pieces (the tiles keep their 128-byte swizzle in shared memory, so
// neither side rearranges elements). Three forms (Plan::slot):
// full (the default), the buffer as it lies in shared memory, 18448 bytes:
//   [0, 8 KiB)          A_g = Gam * A_r * diag(beta), f16 [64][64], swizzled
//   [8 KiB, 16 KiB)     P_g = scale Gam * (Q^ K^T), f16 [64][64], swizzled
//   [16 KiB, +2064)     the chunk's per-token vectors, e^G and G (smem_layout.h enum Scalar)
// packed (override slot=packed; measured slower in the scan where it is latency-bound), what the
// scan reads, 10112 bytes:
//   pieces [0, 288)     A_g: only the pieces on or left of the diagonal (row r's pieces 0 .. r / 8),
//                       by piece column, then row
//   pieces [288, 576)   P_g, the same way
//   pieces [576, 624)   the vectors the scan reads: ek, eq, eu
//   piece 624           e^G, then G (the chunk's total log decay: the transition pass's warm-up)
//   The pieces right of the diagonal are zeros and never travel (the scan zeroes them once per
//   stage), nor do the vectors only the preparation uses: 45 % fewer bytes through DRAM, twice.
// lean (override slot=lean): no P_g; the scan's load warps compute it from the stage's q and k
// with the same functions (chunk_prep.cuh product_mma / product_store, so the same bits), 10368
// bytes (10256 used, padded to whole 128-byte lines):
//   [0, 8 KiB)          A_g, as in the full slot
//   [8 KiB, +2064)      the chunk's per-token vectors, e^G and G, as in the full slot
// Slots are numbered without a prefix sum over the batch: chunk c of sequence n is slot
// floor(bos_n / 64) + n + c. Sequence n has ceil(len_n / 64) chunks and
// floor(bos_{n+1} / 64) + n + 1 >= floor(bos_n / 64) + floor(len_n / 64) + n + 1 >= slot of its
// last chunk + 1, so sequences never share a slot, and every slot is below floor(T / 64) + N.
// The preparation kernel finds its sequence by a binary search over cu_seqlens; slots between
// sequences (at most one per sequence) are skipped.
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "prefill/sm90/smem_layout.h"

namespace gdn::sm90 {

// The full slot: the shared-memory buffer byte for byte.
constexpr int kSlotAg = 0, kSlotPg = kHalfTileBytes, kSlotScalars = 2 * kHalfTileBytes;
constexpr int kFullSlotBytes = kSlotScalars + kScalarBytes;
static_assert(kFullSlotBytes % 16 == 0, "slots are copied in 16-byte pieces");

// The packed slot. Pieces of one triangle: piece column p (16-bit columns 8 p .. 8 p + 7) is
// present in rows 8 p .. 63, so the columns hold 64, 56, .. 8 pieces.
constexpr int kTrianglePieces = 8 * (8 + 7 + 6 + 5 + 4 + 3 + 2 + 1);
constexpr int kSlotVectors = 3;  // ek, eq, eu
constexpr int kPackedSlotPieces = 2 * kTrianglePieces + kSlotVectors * kChunk * 4 / 16 + 1;
constexpr int kSlotGPiece = kPackedSlotPieces - 1;  // e^G, G
// Packed slots 128-byte aligned (whole L2 lines); the pad is never read or written.
constexpr int kPackedSlotBytes = (16 * kPackedSlotPieces + 127) / 128 * 128;
static_assert(kTrianglePieces == 288 && kPackedSlotPieces == 625, "the packed slot's pieces");

// The lean slot: A_g, then the vectors (where P_g was in the full slot, they move up one tile).
constexpr int kLeanSlotScalars = kHalfTileBytes;
constexpr int kLeanSlotUsed = kLeanSlotScalars + kScalarBytes;
constexpr int kLeanSlotBytes = (kLeanSlotUsed + 127) / 128 * 128;
static_assert(kLeanSlotUsed % 16 == 0, "slots are copied in 16-byte pieces");

// The slot forms (Plan::slot; a bool converts to full / packed).
enum SlotForm { kSlotFull = 0, kSlotPacked = 1, kSlotLean = 2 };
GDN_HD constexpr int slot_bytes(int form) {
  return form == kSlotPacked ? kPackedSlotBytes : form == kSlotLean ? kLeanSlotBytes : kFullSlotBytes;
}
// Byte offset of the per-token vectors in a full or lean slot.
GDN_HD constexpr int slot_scalars_offset(int form) { return form == kSlotLean ? kLeanSlotScalars : kSlotScalars; }
// Byte offset of G (the chunk's total log decay) in a slot: beside e^G in the packed form; gam at
// the chunk's last token in the full and lean ones (the same float, as the default read it before).
GDN_HD constexpr int slot_g_offset(int form) {
  return form == kSlotPacked ? 16 * kSlotGPiece + 4 : slot_scalars_offset(form) + (int(kGam) * kChunk + kChunk - 1) * 4;
}
// The 16-byte pieces a slot of `form` carries.
GDN_HD constexpr int slot_pieces(int form) {
  return form == kSlotPacked ? kPackedSlotPieces : (slot_scalars_offset(form) + kScalarBytes) / 16;
}

// First piece of piece column p in a triangle: sum over q < p of (64 - 8 q).
GDN_HD constexpr int triangle_column_start(int p) { return 64 * p - 4 * p * (p - 1); }

// Where piece e of a packed slot lies in a buffer: part 0 the A_g tile, 1 the P_g tile, 2 the
// scalars; offset the byte offset inside that part (swizzled for the tiles: logical piece p of row
// r at piece (p ^ r) % 8 of the row's 128 bytes).
struct SlotPiece {
  int part, offset;
};
GDN_HD constexpr SlotPiece slot_piece(int e) {
  if (e < 2 * kTrianglePieces) {
    const int part = e < kTrianglePieces ? 0 : 1, t = e - part * kTrianglePieces;
    int p = 0;
    for (int q = 1; q < 8; ++q) p += t >= triangle_column_start(q) ? 1 : 0;
    const int r = 8 * p + (t - triangle_column_start(p));
    return {part, r * 128 + ((p ^ r) & 7) * 16};
  }
  if (e < kSlotGPiece) return {2, int(kEk) * kChunk * 4 + 16 * (e - 2 * kTrianglePieces)};
  return {2, kNumScalars * kChunk * 4};
}
static_assert(kEk + 1 == kEq && kEq + 1 == kEu, "ek, eq, eu adjacent, copied as one run");
// Where piece e of a slot of `form` lands in a buffer whose parts lie contiguous, A_g, P_g, the
// scalars (the scan's stages): packed, slot_piece's part x kHalfTileBytes + offset; full and lean
// carry their parts whole and in order (the identity for a full slot).
GDN_HD constexpr int slot_buffer_offset(int form, int e) {
  if (form == kSlotPacked) {
    const SlotPiece at = slot_piece(e);
    return at.part * kHalfTileBytes + at.offset;
  }
  const int at = 16 * e, scalars = slot_scalars_offset(form);
  return at >= scalars ? at - scalars + 2 * kHalfTileBytes : at;
}

// First slot of the sequence starting at packed row bos (the sequence's index n).
GDN_HD int64_t first_slot(int64_t bos, int64_t n) { return bos / kChunk + n; }
// Slots of a batch of T packed tokens in N sequences.
GDN_HD int64_t slot_count(int64_t T, int64_t N) { return T / kChunk + N; }
// Byte offset of (slot, value head h) in the workspace.
GDN_HD int64_t slot_offset(int64_t slot, int h, int HV, int form) { return (slot * HV + h) * int64_t(slot_bytes(form)); }
// Workspace bytes of a call (slots x value heads).
GDN_HD int64_t workspace_bytes(int64_t T, int64_t N, int HV, int form) {
  return slot_count(T, N) * HV * int64_t(slot_bytes(form));
}

}  // namespace gdn::sm90

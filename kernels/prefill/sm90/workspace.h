// The two-pass schedule's workspace (host and device, C++17, no CUDA): the preparation kernel
// writes, for every (chunk, value head), one slot of what the scan reads, and the scan copies it
// back into shared memory in 16-byte pieces. A slot is the scan's shared-memory buffer byte for
// byte (the tiles keep their 128-byte swizzle, so neither side rearranges elements), 18448 bytes:
//   [0, 8 KiB)          A_g = Gam * A_r * diag(beta), f16 [64][64], swizzled
//   [8 KiB, 16 KiB)     P_g = scale Gam * (Q^ K^T), f16 [64][64], swizzled
//   [16 KiB, +2064)     the chunk's per-token vectors, e^G and G (smem_layout.h enum Scalar)
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

constexpr int kSlotAg = 0, kSlotPg = kHalfTileBytes, kSlotScalars = 2 * kHalfTileBytes;
constexpr int kSlotBytes = kSlotScalars + kScalarBytes;
static_assert(kSlotBytes % 16 == 0, "slots are copied in 16-byte pieces");
// Byte offset of G (the chunk's total log decay: gam at its last token) in a slot.
constexpr int kSlotGOffset = kSlotScalars + (int(kGam) * kChunk + kChunk - 1) * 4;

// First slot of the sequence starting at packed row bos (the sequence's index n).
GDN_HD int64_t first_slot(int64_t bos, int64_t n) { return bos / kChunk + n; }
// Slots of a batch of T packed tokens in N sequences.
GDN_HD int64_t slot_count(int64_t T, int64_t N) { return T / kChunk + N; }
// Byte offset of (slot, value head h) in the workspace.
GDN_HD int64_t slot_offset(int64_t slot, int h, int HV) { return (slot * HV + h) * int64_t(kSlotBytes); }
// Workspace bytes of a call (slots x value heads).
GDN_HD int64_t workspace_bytes(int64_t T, int64_t N, int HV) { return slot_count(T, N) * HV * int64_t(kSlotBytes); }

}  // namespace gdn::sm90

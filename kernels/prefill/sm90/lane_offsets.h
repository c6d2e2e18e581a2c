// Lane offsets of the ldmatrix row addresses in the 128-byte swizzle, in the form the unrolled
// loops of the kernels want (host and device, C++17, no CUDA).
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "prefill/sm90/smem_layout.h"

namespace gdn::sm90 {

// The lane's part once, then per k-step one XOR and per tile an immediate (fragments.cuh names
// the rows each lane gives). In a 128-byte-swizzled [rows][64] tile (1024-byte aligned)
// the element (r, c) of a fragment row is at r * 128 + ((c / 8) ^ (r % 8)) * 16. With r = lane
// row + a multiple of 8 and c = lane column (0 or 8) + 16 kk, the piece index is
// (2 kk) ^ ((c_lane / 8) ^ (r % 8)): the lane's offset XOR (32 kk), the XOR touching bits 4-6
// only, which the row parts and the tile base never set. So for a [64][128] q/k tile (two
// [64][64] halves) and k-step kk, n-tile pair np:
//   a_rows(lane, 16 rb, 16 kk)  at (base + a_lane(lane)) ^ xor_of(kk)  + half(kk) + rb * 2048
//   b_rows(lane, 16 np, 16 kk)  at (base + b_lane(lane)) ^ xor_of(kk)  + half(kk) + np * 2048
//   bt_rows(lane, 16 kk, 16 np) at (base + bt_lane(lane)) ^ xor_of(np) + half(np) + kk * 2048
// (a [64][64] tile has no second half). tests/cpu/test_prefill_sm90_plan.cpp checks each against
// qk_offset for every lane and step.
GDN_HD uint32_t a_lane(int lane) { return uint32_t((lane & 15) * 128 + (((lane >> 4) ^ (lane & 7)) & 7) * 16); }
GDN_HD uint32_t b_lane(int lane) {
  return uint32_t((8 * (lane >> 4) + (lane & 7)) * 128 + ((((lane >> 3) & 1) ^ (lane & 7)) & 7) * 16);
}
GDN_HD uint32_t bt_lane(int lane) {
  return uint32_t((8 * ((lane >> 3) & 1) + (lane & 7)) * 128 + (((lane >> 4) ^ (lane & 7)) & 7) * 16);
}
GDN_HD uint32_t xor_of(int step) { return uint32_t(32 * (step & 3)); }
GDN_HD uint32_t half_of(int step) { return uint32_t((step >> 2) * kHalfTileBytes); }

}  // namespace gdn::sm90

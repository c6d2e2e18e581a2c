// Checkpoints in the sm90 fused kernel and scan (docs/method.md 2.4): every position is a multiple of the
// 64-token chunk, so a checkpoint is the state a CTA holds after a whole chunk, stored to its slot
// with the final state's values and rounding. The fused kernel instantiates this only with
// checkpoints asked for (kCkpt): without, its code is what it was.
//
// The fused kernel issues a checkpoint's stores in the next chunk, under U^T's wait, so the state
// warps need the slot one chunk early and as little as possible on the chain between chunks:
// - per chunk one 64-bit compare with the next checkpoint's position, kept in a register (no
//   division by C, no table read);
// - the next checkpoint's checkpoint_indices entry (and, explicit lists, the position after it)
//   are loaded one checkpoint ahead and read only when it comes, so no global load's latency lands
//   on the chain;
// - the store is state_columns.cuh's: one base address a lane and 64 global stores with constant
//   offsets.
// The scan's block_v 32 and 64 twins take this cursor too (scan_kernel.cuh); its block_v 128 and
// 8-bit twins keep checkpoints.cuh (README.md, Checkpoints).
#pragma once

#include <cstdint>

#include "prefill/op.h"
#include "prefill/sm90/smem_layout.h"
#include "prefill/sm90/state_columns.cuh"
#include "prefill/state_ref.cuh"

namespace gdn::sm90 {

struct NextCheckpoint {
  int64_t pos = -1;   // token position of checkpoint j of the sequence; -1: none left
  int j = 0;          // its index in the sequence's row of the tables
  uint32_t word = 0;  // loaded one checkpoint ahead, one word a lane (fetch)

  // A segment starting at chunk c_begin: the first checkpoint after its start. The first
  // position is read here, before the chunk loop.
  __device__ __forceinline__ static NextCheckpoint at(const prefill::Args& a, int64_t n, int c_begin, int lane) {
    NextCheckpoint cur;
    const int64_t begin = int64_t(c_begin) * kChunk;
    if (a.checkpoint_positions != nullptr) {
      while (cur.j < a.J && a.checkpoint_positions[n * a.J + cur.j] > 0 && a.checkpoint_positions[n * a.J + cur.j] <= begin)
        ++cur.j;
      if (cur.j < a.J) cur.pos = a.checkpoint_positions[n * a.J + cur.j];
    } else {
      cur.j = a.checkpoint_every > 0 ? int(begin / a.checkpoint_every) : int(a.J);
      if (cur.j < a.J) cur.pos = int64_t(cur.j + 1) * a.checkpoint_every;
    }
    cur.fetch(a, n, lane);
    return cur;
  }

  // Issues the loads take() reads at checkpoint j: lane 0 the low word of its checkpoint_indices
  // entry, lane 1 the high word (int64 indices), lane 2 the position of entry j + 1 (explicit
  // lists). Each lane loads from its own address, so the words stay in vector registers, untouched
  // until take() shuffles them out: the loads' latency passes under the chunks in between instead
  // of stalling the chain (a uniform load's value is moved to a uniform register at once).
  __device__ __forceinline__ void fetch(const prefill::Args& a, int64_t n, int lane) {
    if (j >= a.J) return;
    const int64_t e = n * a.J + j;
    const bool wide = a.index_dtype != DType::i32;
    const uint32_t* words = static_cast<const uint32_t*>(a.checkpoint_indices);
    const uint32_t* at = words + (wide ? 2 * e : e);
    if (lane == 1 && wide) at = words + 2 * e + 1;
    if (lane == 2 && a.checkpoint_positions != nullptr && j + 1 < a.J)
      at = reinterpret_cast<const uint32_t*>(a.checkpoint_positions + e + 1);
    word = *at;
  }

  // Whether the state after chunk c of a sequence of len tokens is checkpoint j.
  __device__ __forceinline__ bool due(int c, int64_t len) const {
    const int64_t p = int64_t(c + 1) * kChunk;
    return p == pos && p <= len;
  }

  // Checkpoint j's slot for value head h (null for -1); moves the cursor to j + 1. The whole warp
  // calls it (due() is the same for every lane).
  __device__ __forceinline__ prefill::StateRef take(const prefill::Args& a, int64_t n, int h, int lane) {
    const uint32_t lo = __shfl_sync(0xffffffffu, word, 0), hi = __shfl_sync(0xffffffffu, word, 1),
                   next_pos = __shfl_sync(0xffffffffu, word, 2);
    const int64_t slot = a.index_dtype != DType::i32 ? int64_t(uint64_t(hi) << 32 | lo) : int64_t(int32_t(lo));
    ++j;
    pos = j >= a.J ? -1 : a.checkpoint_positions != nullptr ? int64_t(int32_t(next_pos)) : int64_t(j + 1) * a.checkpoint_every;
    fetch(a, n, lane);
    const bool vk = a.layout == Layout::vk, bf16 = a.state_dtype == DType::bf16;
    if (slot < 0) return prefill::StateRef{nullptr, false, vk, a.K, a.V};
    const int64_t elem = (slot * a.HV + h) * int64_t(kHeadDim) * kHeadDim;
    return prefill::StateRef{static_cast<uint8_t*>(a.pool) + elem * (bf16 ? 2 : 4), bf16, vk, a.K, a.V};
  }
};

}  // namespace gdn::sm90

// Checkpoints in the sm90 scan (docs/method.md 2.4): every position is a multiple of the 64-token
// chunk, so a checkpoint is the state a CTA holds after a whole chunk, stored to its slot the way
// the final state is stored. A cursor per CTA walks the sequence's explicit positions (they
// increase); every-C positions need none. The kernels instantiate this only with checkpoints
// asked for (kCkpt): without, their code is what it was.
#pragma once

#include <cstdint>

#include "prefill/op.h"
#include "prefill/sm90/smem_layout.h"
#include "prefill/state_ref.cuh"

namespace gdn::sm90 {

struct CheckpointCursor {
  int64_t next = 0;  // explicit positions: the first entry not yet passed

  // A segment starting at chunk c_begin: skips the positions before it.
  __device__ __forceinline__ static CheckpointCursor at(const prefill::Args& a, int64_t n, int c_begin) {
    CheckpointCursor cur;
    if (a.checkpoint_positions != nullptr)
      while (cur.next < a.J && a.checkpoint_positions[n * a.J + cur.next] > 0 &&
             a.checkpoint_positions[n * a.J + cur.next] <= int64_t(c_begin) * kChunk)
        ++cur.next;
    return cur;
  }

  // The checkpoint the state after chunk c of sequence n (len tokens) is: its index j, or -1 when
  // (c + 1) * 64 is none.
  __device__ __forceinline__ int64_t index_after(const prefill::Args& a, int64_t n, int c, int64_t len) {
    const int64_t p = int64_t(c + 1) * kChunk;
    int64_t j = -1;
    if (p <= len) {
      if (a.checkpoint_positions == nullptr) {
        const int64_t C = a.checkpoint_every;
        if (C > 0 && p % C == 0 && p / C <= a.J) j = p / C - 1;
      } else if (next < a.J && a.checkpoint_positions[n * a.J + next] == p) {
        j = next++;
      }
    }
    return j;
  }

  // Where the state after chunk c of sequence n (value head h, len tokens) goes: its checkpoint's
  // slot, or null when (c + 1) * 64 is no checkpoint or its entry is -1.
  __device__ __forceinline__ prefill::StateRef after_chunk(const prefill::Args& a, int64_t n, int h, int c, int64_t len) {
    const int64_t j = index_after(a, n, c, len);
    if (j < 0) return prefill::StateRef{nullptr, false, a.layout == Layout::vk, a.K, a.V};
    return prefill::checkpoint_state(a, n, h, j);
  }
};

}  // namespace gdn::sm90

// The tensor-core mtp kernel (mtp_mma.cuh) with the next tile's loads in flight while this
// one computes: persistent warps walk tiles i, i + stride, ...; right after a tile moves from
// shared memory into registers, cp.async copies of the next tile and of its q/k/v are issued
// (no registers held). The chunk math is mma_vk::apply_chunk, unchanged (its TF32 form in the
// update build from kMmaTf32FromHeads pairs on, plan.cpp).
//
// Why: the tensor-core kernel issues few instructions per tile but waits on long dependent
// chains (MMA accumulators, the per-token recurrence); one tile per warp leaves the memory system
// idle during that wait (kernels/step/README.md).
//
// Shared memory per warp: one tile (16 x K state values) and two token stages of T tokens.
#pragma once

#include "step/mtp_mma.cuh"

namespace gdn::step {
namespace mma_vk {

template <class TS> __host__ __device__ constexpr int tile_bytes() { return kRows * kHeadK * int(sizeof(TS)); }
template <class TS> __host__ __device__ constexpr int pipelined_warp_bytes(int T) {
  return tile_bytes<TS>() + 2 * stage_bytes(T);
}

// A batch row's slot index as loaded, read back by value() one tile later. An int64_t merged from
// the two index dtypes made the i32 path sign-extend right after its load, so every tile waited
// for the index (an L2 round trip under full load) before its math: 15 % of the kernel's stall
// samples (ncu, T = 8 B = 64; the raw words made the rows 0.4-6.6 % faster, 7456eb4). Here both
// loads write the same words and nothing reads them until the next tile.
struct RawSlot {
  uint32_t lo = 0xffffffffu, hi = 0xffffffffu;  // -1 in either dtype
  __device__ int64_t value(const decode::Args& a) const {
    return a.index_dtype == DType::i32 ? int64_t(int32_t(lo)) : int64_t((uint64_t(hi) << 32) | lo);
  }
};
__device__ __forceinline__ RawSlot load_raw_slot(const decode::Args& a, uint32_t b) {
  RawSlot r;
  if (a.index_dtype == DType::i32) {
    r.lo = static_cast<const uint32_t*>(a.indices)[b];
  } else {
    const uint2 w = static_cast<const uint2*>(a.indices)[b];
    r.lo = w.x, r.hi = w.y;
  }
  return r;
}

// Tile::load's policy for a tile already in shared memory.
struct SharedTile {
  __device__ static uint4 load16(const void* p) { return *static_cast<const uint4*>(p); }
};

}  // namespace mma_vk

// T <= kStageTokens (all tokens staged at once; at most 32 gates), no intermediate cache
// (plan.cpp mma_supported). SPLIT: see apply_chunk (off: fewer registers; the two measure the same).
// READ_ONLY: the build for read_only_call calls (no state update, nothing stored).
// MINW: resident warps per SM the registers are budgeted for, by __maxnreg__: with
// __launch_bounds__(32, 11) ptxas emitted the 168-register code of the 12-warp build (same SASS);
// with __maxnreg__(184) the update builds take 180-182 registers and run 0.8-5.2 % faster
// (f85e5db, 7ef9836).
// One gate per lane (T <= 32): the second half of WarpGateIn would hold registers for nothing.
template <class TS, class M = InPlaceMem, int W = 1, int MINW = kMmaPipelinedMinWarps, bool SPLIT = false, bool READ_ONLY = false,
          bool TF32 = false>
__global__ void __launch_bounds__(W * 32, 1) __maxnreg__(register_budget(MINW))
    step_vk_mma_pipelined_kernel(const decode::Args a) {
  using namespace mma_vk;
  constexpr int kCopies = tile_bytes<TS>() / 16 / 32;  // 16-byte copies per lane per tile
  extern __shared__ uint4 smem_raw[];
  const int lane = threadIdx.x & 31;
  char* base = reinterpret_cast<char*>(smem_raw) + (threadIdx.x >> 5) * pipelined_warp_bytes<TS>(a.T);
  TS* buf = reinterpret_cast<TS*>(base);
  auto stage = [&](int p) { return TokenStage(base + tile_bytes<TS>() + p * stage_bytes(a.T), a.T); };

  const int tiles = a.V / kRows;
  const uint32_t n = uint32_t(a.B * a.HV * tiles), stride = gridDim.x * uint32_t(W);
  uint32_t i = blockIdx.x * uint32_t(W) + (threadIdx.x >> 5);
  if (i >= n) return;

  // Unrolled copies with constant offsets: one instruction each (a lane-strided loop cost ~7).
  auto prefetch = [&](const WarpTask& w, const TokenStage& st) {
    if (w.slot >= 0) {
      const char* src = reinterpret_cast<const char*>(static_cast<const TS*>(a.pool) + head_offset(a, w.slot, w.h) +
                                                      w.tile * kRows * kHeadK) + lane * 16;
      char* dst = reinterpret_cast<char*>(buf) + lane * 16;
#pragma unroll
      for (int c = 0; c < kCopies; ++c) M::copy16_async(dst + c * 512, src + c * 512);
    }
    st.start(a, w.b, w.hk, w.h, w.tile * kRows, 0, a.T, lane);  // commits both
  };

  // The slot of task j's row (-1 past the end), read one task ahead of its prefetch.
  const uint32_t tiles_per_row = uint32_t(a.HV * tiles);
  auto slot_ahead = [&](uint32_t j) { return j < n ? load_raw_slot(a, j / tiles_per_row) : RawSlot{}; };

  WarpTask cur = task_at(a, tiles, i);
  cur.slot = slot_of(a, cur.b);
  prefetch(cur, stage(0));
  WarpGateIn gate_in = load_gate_inputs<false>(a, cur.b, cur.h, lane);  // T <= 32
  i += stride;
  RawSlot next_slot = slot_ahead(i);

  for (int p = 0;; p ^= 1) {
    const TokenStage st = stage(p);
    st.wait();  // the tile and the tokens
    Tile<TS> tile;
    if (cur.slot >= 0) tile.template load<SharedTile>(buf, lane >> 2, lane & 3);
    const WarpGates gates = gates_of<false>(a, gate_in, lane);
    __syncwarp();  // every lane has its part of the tile: the buffer is free

    const bool more = i < n;
    const WarpTask now = cur;
    if (more) {
      cur = task_at(a, tiles, i);
      cur.slot = next_slot.value(a);
      prefetch(cur, stage(p ^ 1));
      gate_in = load_gate_inputs<false>(a, cur.b, cur.h, lane);
      i += stride;
      next_slot = slot_ahead(i);
    }

    const int row0 = now.tile * kRows;
    if (now.slot < 0) {
      zero_o(a, now, row0, lane);
    } else {
      apply_staged<TS, SPLIT, READ_ONLY, TF32>(tile, a, now, row0, st, gates, 0, a.T, lane);
      if (!READ_ONLY && a.update_state)
        tile.template store<M>(static_cast<TS*>(a.pool) + head_offset(a, now.slot, now.h) + int64_t(row0) * kHeadK,
                               lane >> 2, lane & 3);
    }
    if (!more) break;
  }
}

}  // namespace gdn::step

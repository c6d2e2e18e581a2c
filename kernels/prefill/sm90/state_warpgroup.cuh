// The state-dependent half of a chunk on wgmma: the four state warps of a block_v 64 CTA are one
// warpgroup (block_v 128: eight, two), and the products of state_warp.cuh become warpgroup MMAs
// with the same registers. A wgmma m64nN accumulator is, per warp, the m16n8 accumulator tiles of
// its 16 rows side by side, and its register A operand is per warp the m16n8k16 A fragment, so
// S^T (warp w: value columns 16 w ..), W^T and V_d^T keep their layouts; what changes is that B
// comes straight from the swizzled shared-memory tiles (one read per warpgroup instead of an
// ldmatrix per warp) and the products run asynchronously:
//   U^T, (Q S)^T  m64n64k16 x 8      B: k / q tile, K-major
//   V_d^T         m64n64k16 x 4      B: A_g, K-major (the full square: zeros above the diagonal)
//   O^T           m64n64k16 x 4      B: P_g, K-major (likewise)
//   S^T update    m64n64k16 x 4 x 2  B: k tile, MN-major (both 64-column halves of the head dim)
// Per element these are the same k16 steps in the same order as mma.sync's, and the tensor cores
// round them alike: the same bits as the mma.sync state warps (GPU test WgmmaGivesMmaSyncBits).
// Turns (block_v 128, Plan::pingpong): the two warpgroups issue their products in turn, so one's
// epilogue (W^T, the operand conversions, the decay, O's store) runs under the other's products
// instead of both contending for the tensor cores and then both leaving them idle (FlashInfer's
// SM90 kernel and CUTLASS's ping-pong GEMM do the same).
#pragma once

#include <cstdint>

#include "common/ptx/named_barrier.cuh"
#include "common/ptx/wgmma.cuh"
#include "prefill/sm90/state_warp.cuh"

namespace gdn::sm90 {

// Named barriers of the turns: warpgroup g waits on kTurnBarrier + g for its turn (the kernels'
// own named barriers use id 1).
constexpr int kTurnBarrier = 2;

// BV 64: warps 0-3, one warpgroup; BV 128: warps 0-7, two, each on its own 64 columns with the
// same B tiles. kOneGroup: one wgmma group in flight at a time ((Q S)^T waited before W^T, not
// beside it): at 192 registers (the fused kernel) two groups in flight make ptxas serialize every
// wgmma of the kernel (C7512); one does not.
template <class In, int BV = 64, bool kOneGroup = false> struct StateWarpgroup : StateWarp<In, BV> {
  static_assert(BV == 64 || BV == 128, "whole warpgroups");
  using Base = StateWarp<In, BV>;
  using Base::lane;
  using Base::lc;
  using Base::s;
  int turn_wg = -1;  // this warpgroup's index when the two take turns, else -1

  // The turns: await before a group of products is issued, pass once it is committed. Warpgroup 1
  // passes first (begin_turns) so that warpgroup 0 issues first, and warpgroup 0 takes one turn
  // more at the end (end_turns): every barrier phase gets its 128 waiting and 128 arriving threads.
  __device__ __forceinline__ void await_turn() const {
    if (turn_wg >= 0) ptx::named_bar_sync(kTurnBarrier + turn_wg, 256);
  }
  __device__ __forceinline__ void pass_turn() const {
    if (turn_wg >= 0) ptx::named_bar_arrive(kTurnBarrier + (turn_wg ^ 1), 256);
  }
  __device__ __forceinline__ void begin_turns(int wg) {
    turn_wg = wg;
    if (wg == 1) pass_turn();
  }
  __device__ __forceinline__ void end_turns() const {
    if (turn_wg == 0) await_turn();
  }

  static __device__ __forceinline__ uint64_t k_major(uint32_t at) { return ptx::wgmma_smem_desc_sw128(at, 16, 1024); }
  // For the MN-major tile both offsets are the 8-row group stride: n spans one 64-column block.
  static __device__ __forceinline__ uint64_t mn_major(uint32_t at) { return ptx::wgmma_smem_desc_sw128(at, 1024, 1024); }
  static __device__ __forceinline__ float (&flat(float (&x)[8][4]))[32] { return reinterpret_cast<float(&)[32]>(x); }

  // acc += a m^T over the chunk's 64 tokens: a the A operands of the 4 token k-steps, m the [64][64]
  // f16 tile at shared address m_at, lower triangular with zeros above (the preparation writes
  // them). All four k-steps at full width: products on sub-ranges of the accumulators (n48, n32,
  // n16 for the triangle) make ptxas serialize every wgmma of the kernel (C7511).
  static __device__ __forceinline__ void times_transposed(float (&acc)[8][4], const uint32_t (&a)[4][4], uint32_t m_at) {
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) ptx::wgmma_m64k16_f32_f16_rs<64, 0>(flat(acc), a[kk], k_major(m_at + 32u * kk), true);
  }

  // while_u runs once U^T is issued and before it is waited for: the warps would wait for the
  // tensor cores there, and the state still holds what it held at the chunk's start (the fused
  // checkpoint twin stores the previous chunk's checkpoint there). Only with kOneGroup: with two
  // groups in flight, code there that reads the state makes ptxas wait for both (C7517) and, at
  // block_v 64, serialize every wgmma (C7518).
  struct Nothing {
    __device__ __forceinline__ void operator()() const {}
  };
  template <bool kOut = true, class WhileU = Nothing>
  __device__ __forceinline__ void chunk(uint8_t* smem, int stage, int buf, int rows, int64_t row0, const prefill::Args& a,
                                        int h, int vcol0, const WhileU& while_u = {}) {
    constexpr SmemLayout L(BV, kScanKernel);
    const uint32_t s0 = smem_u32(smem), k_at = s0 + L.k(stage), q_at = s0 + L.q(stage);
    uint8_t* vt = smem + L.v(stage);
    const auto [ek, eq, eu] = Base::vectors(smem, buf);

    // U^T, then (Q S)^T, over the 8 k-steps of the head dim, as two groups: the chain waits for U^T
    // only (w holds U^T, then W^T); (Q S)^T lands while W^T and V_d^T are computed (kOneGroup:
    // issued and waited before W^T).
    float w[8][4], o[8][4];
    {
      uint32_t as[8][4];
#pragma unroll
      for (int kk = 0; kk < kHeadDim / 16; ++kk) acc_to_a(s[2 * kk], s[2 * kk + 1], as[kk]);
      auto issue_by_head_dim = [&](float (&acc)[8][4], uint32_t tile_at) {
#pragma unroll
        for (int kk = 0; kk < kHeadDim / 16; ++kk)
          ptx::wgmma_m64k16_f32_f16_rs<64, 0>(flat(acc), as[kk], k_major(tile_at + half_of(kk) + 32u * (kk & 3)), kk > 0);
        ptx::wgmma_commit_group();
      };
      await_turn();
      ptx::wgmma_fence();
      issue_by_head_dim(w, k_at);
      if constexpr (kOut && !kOneGroup) {
        issue_by_head_dim(o, q_at);
        pass_turn();
        while_u();
        ptx::wgmma_wait_group<1>();
      } else {
        pass_turn();
        while_u();
        ptx::wgmma_wait_group<0>();
      }
      ptx::wgmma_fence_operands(flat(w));
      if constexpr (kOut && kOneGroup) {
        await_turn();
        ptx::wgmma_fence();
        issue_by_head_dim(o, q_at);
        pass_turn();
        ptx::wgmma_wait_group<0>();
        ptx::wgmma_fence_operands(flat(o));
      }
    }
    this->subtract_from_v(w, vt, ek);  // W^T = V^T - U^T diag(ek)
    // V_d^T = W^T A_g^T.
    float vd[8][4];
    {
      uint32_t aw[4][4];
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) acc_to_a(w[2 * kk], w[2 * kk + 1], aw[kk]);
      zero(vd);
      ptx::wgmma_fence_operands(flat(vd));
      await_turn();
      ptx::wgmma_fence();
      times_transposed(vd, aw, s0 + L.ag(buf));
      ptx::wgmma_commit_group();
      pass_turn();
      ptx::wgmma_wait_group<0>();
      ptx::wgmma_fence_operands(flat(vd));
    }
    if constexpr (kOut) ptx::wgmma_fence_operands(flat(o));  // (Q S)^T has landed (with V_d^T, or before W^T)
    // S^T = e^G S^T + (V_d^T diag(eu)) K first (the chain), then O^T = (Q S)^T diag(eq) + V_d^T P_g^T
    // while it runs.
    uint32_t av[4][4], ap[4][4];
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      this->update_operand(vd, eu, kk, ap[kk]);
      if constexpr (kOut) acc_to_a(vd[2 * kk], vd[2 * kk + 1], av[kk]);
    }
    this->decay(smem, buf);
    float(&s_lo)[32] = *reinterpret_cast<float(*)[32]>(&s[0][0]);
    float(&s_hi)[32] = *reinterpret_cast<float(*)[32]>(&s[8][0]);
    ptx::wgmma_fence_operands(s_lo);
    ptx::wgmma_fence_operands(s_hi);
    await_turn();
    ptx::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      // Tokens 16 kk .. 16 kk + 15 are rows 16 kk .. of the k tile: two 8-row groups, 2 KiB.
      ptx::wgmma_m64k16_f32_f16_rs<64, 1>(s_lo, ap[kk], mn_major(k_at + 2048u * kk), true);
      ptx::wgmma_m64k16_f32_f16_rs<64, 1>(s_hi, ap[kk], mn_major(k_at + kHalfTileBytes + 2048u * kk), true);
    }
    ptx::wgmma_commit_group();
    if constexpr (kOut) {
      this->scale_tokens(o, eq);
      ptx::wgmma_fence_operands(flat(o));
      ptx::wgmma_fence();
      times_transposed(o, av, s0 + L.pg(buf));
      ptx::wgmma_commit_group();
    }
    pass_turn();
    ptx::wgmma_wait_group<0>();
    ptx::wgmma_fence_operands(s_lo);
    ptx::wgmma_fence_operands(s_hi);
    if constexpr (kOut) {
      ptx::wgmma_fence_operands(flat(o));
      this->store_o(o, vt, rows, row0, a, h, vcol0);
    }
  }
};

}  // namespace gdn::sm90

// The one translation unit of the fast decode/mtp kernels: every kernel template of the family
// is instantiated here and nowhere else, and the launch follows a Plan (plan.h) instead of
// re-deciding it. Grid and shared-memory sizes per kernel; the choices are in plan.cpp.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "core/cuda_check.h"
#include "core/errors.h"
#include "core/state_quant.h"
#include "step/decode.cuh"
#include "step/decode_8bit.cuh"
#include "step/kernel.cuh"
#include "step/mtp_mma.cuh"
#include "step/mtp_mma_8bit.cuh"
#include "step/mtp_mma_pipelined.cuh"
#include "step/read_only.cuh"
#include "step/step.h"

namespace gdn::step {
namespace {

int64_t warps_for(const decode::Args& a, int rows_or_cols_per_warp) { return a.B * a.HV * (a.V / rows_or_cols_per_warp); }

template <class TS, int ROWS> void launch_decode_vk(const decode::Args& a, cudaStream_t st) {
  constexpr int rows_per_warp = 4 * ROWS;
  const int64_t warps = warps_for(a, rows_per_warp);
  const int smem = kWarps * stage_bytes(1, rows_per_warp);
  decode_vk_kernel<TS, ROWS><<<unsigned((warps + kWarps - 1) / kWarps), kWarps * 32, smem, st>>>(a);
}

template <class Q, int ROWS> void launch_decode_vk_8bit(const decode::Args& a, cudaStream_t st) {
  constexpr int rows_per_warp = 4 * ROWS;
  const int64_t warps = warps_for(a, rows_per_warp);
  const int smem = kWarps * stage_bytes(1, rows_per_warp, true);  // k^, q^ in fp32
  decode_vk_8bit_kernel<Q, ROWS><<<unsigned((warps + kWarps - 1) / kWarps), kWarps * 32, smem, st>>>(a);
}

template <class Q, int ROWS> void launch_tokens_vk_8bit(const decode::Args& a, cudaStream_t st) {
  constexpr int rows_per_warp = 4 * ROWS;
  const int tc = a.T < kVkStageTokens ? a.T : kVkStageTokens;
  step_vk_8bit_kernel<Q, ROWS><<<unsigned(warps_for(a, rows_per_warp)), 32, stage_bytes(tc, rows_per_warp, true), st>>>(a);
}

// One warp per block, one per (row, value head, 16 rows), as launch_mma.
template <class Q> void launch_mma_8bit(const decode::Args& a, cudaStream_t st) {
  const int64_t warps = a.B * a.HV * (a.V / mma_vk::kRows);
  const int tc = a.T < kStageTokens ? a.T : kStageTokens;
  step_vk_mma_8bit_kernel<Q><<<unsigned(warps), 32, unsigned(mma_vk::stage_bytes(tc)), st>>>(a);
}

// 8-bit pools: decode_vk, tokens_vk and mma (check() refuses every other kernel for them).
template <class Q> void launch_8bit(const decode::Args& a, const Plan& p, cudaStream_t st) {
  if (p.kernel == Kernel::mma) return launch_mma_8bit<Q>(a, st);
  if (p.kernel == Kernel::tokens_vk) {
    if (p.depth == 1) return launch_tokens_vk_8bit<Q, 1>(a, st);
    if (p.depth == 2) return launch_tokens_vk_8bit<Q, 2>(a, st);
    return launch_tokens_vk_8bit<Q, 4>(a, st);
  }
  if (p.kernel != Kernel::decode_vk) throw runtime_error("fast step: no 8-bit kernel for plan " + p.describe(a.state_dtype));
  if (p.depth == 1) return launch_decode_vk_8bit<Q, 1>(a, st);
  if (p.depth == 2) return launch_decode_vk_8bit<Q, 2>(a, st);
  if (p.depth == kDecode8bitDeepDepth) return launch_decode_vk_8bit<Q, kDecode8bitDeepDepth>(a, st);
  return launch_decode_vk_8bit<Q, 4>(a, st);
}

template <class TS, int LPK> void launch_decode_kv(const decode::Args& a, cudaStream_t st) {
  constexpr int cols_per_warp = LPK * Chunk<TS>::E;
  const int64_t warps = warps_for(a, cols_per_warp);
  const int smem = kWarps * stage_bytes(1, cols_per_warp);
  decode_kv_kernel<TS, LPK><<<unsigned((warps + kWarps - 1) / kWarps), kWarps * 32, smem, st>>>(a);
}

template <class TS, int ROWS, int TILES> void launch_read_only(const decode::Args& a, cudaStream_t st) {
  constexpr int rows_per_warp = 4 * ROWS * TILES;
  const int smem = stage_bytes(a.T, rows_per_warp, true) + kGramBytes;
  step_vk_read_only_kernel<TS, ROWS, TILES, read_only_min_warps(sizeof(TS) == 2)>
      <<<unsigned(warps_for(a, rows_per_warp)), 32, smem, st>>>(a);
}

template <class TS, int ROWS> void launch_tokens_vk(const decode::Args& a, cudaStream_t st) {
  constexpr int rows_per_warp = 4 * ROWS;
  const int tc = a.T < kVkStageTokens ? a.T : kVkStageTokens;
  step_vk_kernel<TS, ROWS><<<unsigned(warps_for(a, rows_per_warp)), 32, stage_bytes(tc, rows_per_warp, true), st>>>(a);
}

template <class TS, int LPK> void launch_tokens_kv(const decode::Args& a, cudaStream_t st) {
  constexpr int cols_per_warp = LPK * Chunk<TS>::E;
  const int64_t warps = warps_for(a, cols_per_warp);
  const int tc = a.T < kStageTokens ? a.T : kStageTokens;
  const int smem = kWarps * stage_bytes(tc, cols_per_warp);
  step_kv_kernel<TS, LPK><<<unsigned((warps + kWarps - 1) / kWarps), kWarps * 32, smem, st>>>(a);
}

// One warp per block, one per (row, value head, 16 rows).
template <class TS, bool READ_ONLY> void launch_mma(const decode::Args& a, cudaStream_t st) {
  const int64_t warps = a.B * a.HV * (a.V / mma_vk::kRows);
  const int tc = a.T < kStageTokens ? a.T : kStageTokens;
  step_vk_mma_kernel<TS, InPlaceMem, 1, kMmaMinWarps, true, READ_ONLY>
      <<<unsigned(warps), 32, unsigned(mma_vk::stage_bytes(tc)), st>>>(a);
}

// Persistent grid: as many one-warp blocks as fit on the GPU at once (at most one per tile).
template <bool READ_ONLY, bool TF32> void launch_mma_pipelined(const decode::Args& a, cudaStream_t st) {
  auto kernel = step_vk_mma_pipelined_kernel<float, InPlaceMem, 1, kMmaPipelinedMinWarps, false, READ_ONLY, TF32>;
  const int smem = mma_vk::pipelined_warp_bytes<float>(a.T);
  int device = 0, sms = 0, per_sm = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 32, smem));
  if (per_sm < 1) throw runtime_error("fast step: no occupancy for the pipelined tensor-core kernel");
  const int64_t tiles = a.B * a.HV * (a.V / mma_vk::kRows);
  kernel<<<unsigned(std::min<int64_t>(tiles, int64_t(per_sm) * sms)), 32, smem, st>>>(a);
}

template <class TS> void launch_cuda_core(const decode::Args& a, const Plan& p, cudaStream_t st) {
  constexpr bool bf16 = std::is_same_v<TS, uint16_t>;
  switch (p.kernel) {
    case Kernel::decode_vk:
      if (p.depth == 1) return launch_decode_vk<TS, 1>(a, st);
      if (p.depth == 2) return launch_decode_vk<TS, 2>(a, st);
      return launch_decode_vk<TS, 4>(a, st);
    case Kernel::decode_kv:  // bf16 pools only (check())
      if constexpr (bf16) return p.depth == 2 ? launch_decode_kv<TS, 2>(a, st) : launch_decode_kv<TS, 4>(a, st);
      break;
    case Kernel::tokens_vk:
      if (p.depth == 1) return launch_tokens_vk<TS, 1>(a, st);
      if (p.depth == 2) return launch_tokens_vk<TS, 2>(a, st);
      return launch_tokens_vk<TS, 4>(a, st);
    case Kernel::tokens_kv:  // depth 4 for fp32 pools only (check())
      if constexpr (!bf16) {
        if (p.depth == 4) return launch_tokens_kv<TS, 4>(a, st);
      }
      return launch_tokens_kv<TS, 2>(a, st);
    case Kernel::read_only_vk:
      if (p.depth == 1) return launch_read_only<TS, 1, 1>(a, st);
      if (p.depth == 2) return launch_read_only<TS, 2, 1>(a, st);
      if (p.tiles == 4) return launch_read_only<TS, 4, 4>(a, st);
      if (p.tiles == 2) return launch_read_only<TS, 4, 2>(a, st);
      return launch_read_only<TS, 4, 1>(a, st);
    default: break;
  }
  throw runtime_error("fast step: no kernel for plan " + p.describe(a.state_dtype));
}

}  // namespace

void launch(const Shape& s, const TensorSet& t, const Plan& p, void* stream) {
  if (const std::string why = check(p, Call::of(s)); !why.empty())
    throw runtime_error("fast step: plan " + p.describe(s.state_dtype) + " cannot run this call: " + why);
  const decode::Args a = decode::make_args(s, t);
  if (a.B == 0) return;
  auto st = static_cast<cudaStream_t>(stream);
  const bool bf16 = a.state_dtype == DType::bf16;
  if (quant::is_8bit(a.state_dtype)) {
    a.state_dtype == DType::fp8e4m3 ? launch_8bit<Fp8Codes>(a, p, st) : launch_8bit<Int8Codes>(a, p, st);
    return check_launch("fast step");
  }
  if (p.kernel == Kernel::mma_pipelined) {
    if (p.read_only) launch_mma_pipelined<true, false>(a, st);
    else if (p.form == MmaForm::tf32) launch_mma_pipelined<false, true>(a, st);
    else launch_mma_pipelined<false, false>(a, st);
  } else if (p.kernel == Kernel::mma) {
    if (bf16) p.read_only ? launch_mma<uint16_t, true>(a, st) : launch_mma<uint16_t, false>(a, st);
    else p.read_only ? launch_mma<float, true>(a, st) : launch_mma<float, false>(a, st);
  } else {
    bf16 ? launch_cuda_core<uint16_t>(a, p, st) : launch_cuda_core<float>(a, p, st);
  }
  check_launch("fast step");
}

}  // namespace gdn::step

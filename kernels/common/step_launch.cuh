// Host side of the fast decode/mtp kernels: which shapes they handle, the tile chosen per
// problem size, and the launch. Shared by kernels/decode/fast.cu and kernels/mtp/fast.cu.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "common/step_kernel.cuh"
#include "core/registry.h"
#include "core/shape.h"

namespace gdn::fast {

// "" when the fast kernels handle the shape, else why not.
inline std::string step_support(const Shape& s) {
  if (s.input_dtype != DType::bf16) return "q/k/v must be bf16";
  if (s.dk != kHeadK) return "head size K must be 128";
  if (s.dv % 16 != 0) return "head size V must be a multiple of 16";
  if (s.state_dtype != DType::f32 && s.state_dtype != DType::bf16) return "state must be f32 or bf16";
  if (s.op == OpKind::mtp && s.tokens > 64) return "at most 64 tokens";
  return "";
}

// Tile depth: vk rows per lane (a warp covers 4 x depth rows: 1, 2 or 4), kv lanes per K row
// (a warp covers depth x E columns: 2 or 4, bf16 always 2). Deeper tiles keep more bytes in
// flight per warp; shallower ones make more warps, which small batches need to fill the GPU.
struct StepConfig {
  int depth = 4;
};

// Measured on H200 (docs/notes/decode-mtp.md): depth 4 from 512 (row, head) pairs up, depth 2
// below (depth 1 for fp32 at 32 pairs or fewer, i.e. B = 1 with 32 heads).
inline StepConfig choose_config(const decode::Args& a) {
  const int64_t heads = a.B * a.HV;
  StepConfig c;
  if (a.layout == Layout::kv) {
    c.depth = a.state_dtype == DType::bf16 || heads <= 32 ? 2 : 4;
  } else if (heads > 256) {
    c.depth = 4;
  } else {
    c.depth = a.state_dtype == DType::f32 && heads <= 32 ? 1 : 2;
  }
  return c;
}

inline int64_t warps_for(const decode::Args& a, int rows_or_cols_per_warp) {
  return a.B * a.HV * (a.V / rows_or_cols_per_warp);
}

template <class TS, int ROWS> void launch_vk(const decode::Args& a, cudaStream_t st) {
  constexpr int rows_per_warp = 4 * ROWS;
  const int64_t warps = warps_for(a, rows_per_warp);
  const int tc = a.T < kStageTokens ? a.T : kStageTokens;
  const int smem = kWarps * stage_bytes(tc, rows_per_warp);
  step_vk_kernel<TS, ROWS><<<unsigned((warps + kWarps - 1) / kWarps), kWarps * 32, smem, st>>>(a);
}

template <class TS, int LPK> void launch_kv(const decode::Args& a, cudaStream_t st) {
  constexpr int cols_per_warp = LPK * Chunk<TS>::E;
  const int64_t warps = warps_for(a, cols_per_warp);
  const int tc = a.T < kStageTokens ? a.T : kStageTokens;
  const int smem = kWarps * stage_bytes(tc, cols_per_warp);
  step_kv_kernel<TS, LPK><<<unsigned((warps + kWarps - 1) / kWarps), kWarps * 32, smem, st>>>(a);
}

// Enqueues one call on `st`. Throws std::runtime_error on an unsupported depth or a launch error.
inline void launch_step(const decode::Args& a, const StepConfig& c, cudaStream_t st) {
  if (a.B == 0) return;
  const bool bf16 = a.state_dtype == DType::bf16;
  if (a.layout == Layout::vk) {
    switch (c.depth * 2 + bf16) {
      case 2: launch_vk<float, 1>(a, st); break;
      case 4: launch_vk<float, 2>(a, st); break;
      case 8: launch_vk<float, 4>(a, st); break;
      case 3: launch_vk<uint16_t, 1>(a, st); break;
      case 5: launch_vk<uint16_t, 2>(a, st); break;
      case 9: launch_vk<uint16_t, 4>(a, st); break;
      default: throw std::runtime_error("fast step: unsupported vk depth " + std::to_string(c.depth));
    }
  } else {
    switch (c.depth * 2 + bf16) {
      case 4: launch_kv<float, 2>(a, st); break;
      case 8: launch_kv<float, 4>(a, st); break;
      case 5: launch_kv<uint16_t, 2>(a, st); break;
      default: throw std::runtime_error("fast step: unsupported kv depth " + std::to_string(c.depth));
    }
  }
  if (const cudaError_t e = cudaPeekAtLastError(); e != cudaSuccess)
    throw std::runtime_error(std::string("fast step: launch failed: ") + cudaGetErrorString(e));
}

// The registry entry point of decode/fast and mtp/fast.
inline void step_fast_launch(const Shape& s, const TensorSet& t, const LaunchContext& ctx) {
  const decode::Args a = decode::make_args(s, t);
  launch_step(a, choose_config(a), static_cast<cudaStream_t>(ctx.stream));
}

// bf16 rounding of o (and of a bf16 pool) measured at <= 1.8e-3 relative L2; fp32 pools ~1e-7.
inline std::vector<Tolerance> step_fast_tolerances() { return {{"o", 4e-3}, {"pool", 4e-3}, {"intermediate", 4e-3}}; }

}  // namespace gdn::fast

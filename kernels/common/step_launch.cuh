// Host side of the fast decode/mtp kernels: which shapes they handle, the kernel and tile chosen
// per problem, and the launch. Shared by kernels/decode/fast.cu and kernels/mtp/fast.cu.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "common/step_decode.cuh"
#include "common/step_kernel.cuh"
#include "common/step_mtp_mma.cuh"
#include "common/step_mtp_mma_pipelined.cuh"
#include "common/step_read_only.cuh"
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
  // warp ids are 32-bit: rows x value heads x (V / 4) tiles must stay below 2^31
  if (s.batch * s.h_v * (s.dv / 4) >= (int64_t(1) << 31)) return "too many (row, head) tiles for 32-bit warp ids";
  return "";
}

// Tile depth: vk rows per lane (a warp covers 4 x depth rows: 1, 2 or 4), kv lanes per K row (a
// warp covers depth x E columns: 2 or 4; the bf16 T-token kernel only 2). Deeper tiles keep more
// bytes in flight per warp; shallower ones make more warps, which small batches need to fill the
// GPU. mma: the tensor-core chunked kernel (step_mtp_mma.cuh) instead of the CUDA-core one.
struct StepConfig {
  int depth = 4;
  bool mma = false;
};

// From 8 tokens on (vk, no cache) the tensor-core kernel wins: H200, B = 128 (events, fourth
// session): T = 8 162 us (pipelined) vs 188 (CUDA cores), T = 16 205 us; T = 5 loses (158 vs
// 146). At T = 6 and 7 the standalone bench (events) saw a tie where gdnbench (CUPTI) later
// measured the tensor-core kernels ahead: kMmaFp32MinTokens below. Up to
// kMmaPipelinedMaxTokens tokens it runs pipelined (step_mtp_mma_pipelined.cuh) for fp32 pools
// from kMmaPipelinedMinHeads (row, value head) pairs on (below); beyond that many tokens its two
// stages cost occupancy (T = 16: 255 vs 205 us), and for bf16 pools the pipelined build spills
// (second session: 182 vs 153 us at T = 8).
constexpr int kMmaMinTokens = 8;
constexpr int kMmaPipelinedMaxTokens = 8;
// T = 6 and 7 with an fp32 pool too (sixth session, gdnbench A/B, CUPTI, one call, H200, 16/32
// heads): T = 7 faster on tensor cores at every batch size (B = 64 / 128 / 256: 78.7 / 151.1 /
// 301.1 us vs 89.3 / 171.3 / 332.0 on the T-token kernel), T = 6 at B <= 4 and B >= 64 (77.9 /
// 150.1 / 300.3 vs 81.4 / 158.7 / 307.8) but not in between (B = 16: 27.0 vs 25.0 us, B = 32
// a tie): kMmaT6MinHeads puts the switch just past the tie (B = 33-63 not measured).
constexpr int kMmaFp32MinTokens = 6;
constexpr int64_t kMmaT6MinHeads = 1025;
// Below kMmaPipelinedMinHeads (row, value head) pairs the plain kernel is faster: the persistent
// grid's setup costs more than the pipeline hides. H200, T = 8, fp32, 32 value heads (fifth
// session): B = 1 / 2 / 4 plain 5.44 / 6.53 / 9.12 us against 5.76 / 7.04 / 9.95 pipelined
// (gdnbench, CUPTI, two GPUs); from B = 8 to 64 the pipelined kernel leads by 2-5 % (round 38).
// At B = 256 the slot pattern decides (gdnbench, one call, two binaries, two repetitions): identity
// slots 307.8 us pipelined vs 316.5-316.9 plain, random slots 314.9-315.2 vs 310.8-311.4; the
// pipelined kernel stays for large batches.
constexpr int64_t kMmaPipelinedMinHeads = 129;
// The chunk math runs on bf16 MMAs (apply_chunk), except in the pipelined kernel's update build
// from kMmaTf32FromHeads pairs on, where the TF32 form measures faster; and T = 8 update calls
// from kMmaPlainFromHeads pairs on take the plain kernel. H200, 16/32 heads, fp32, gdnbench,
// CUPTI, one call per comparison, two repetitions (ninth session; TF32 = the eighth session's code):
//   pipelined, bf16 vs TF32: T = 8 B = 16 23.5 vs 25.2 us, B = 64 79.6 vs 80.3, B = 128 156.5 vs
//   155.4, B = 256 317.3 vs 313.1; T = 7 B = 256 310.8 vs 302.2; T = 6 B = 256 307.6 vs 300.2.
//   T = 8 B = 256 plain (bf16) vs pipelined TF32: 308.6 vs 313.1 (identity slots), 303.4 vs 318.4
//   (random); T = 6 / 7 and T = 8 B = 128 on the plain kernel: 2-9 % slower.
// Read-only (READ_ONLY) builds keep bf16 everywhere: T = 8 B = 256 165.8 vs 192.2 us pipelined.
constexpr int64_t kMmaTf32FromHeads = 4096;
constexpr int64_t kMmaPlainFromHeads = 8192;

// Read-only calls (update_state off, no cache). Up to kGramTokens tokens step_vk_read_only_kernel
// takes them; from 5 tokens on, with an fp32 pool and the pipelined kernel's batch sizes, the
// tensor-core READ_ONLY builds (no state update). H200, 16/32 heads, fp32, gdnbench A/B, CUPTI,
// one call, two repetitions (eighth session): T = 5 B = 32 / 256 29.9 / 180.3 us against 35.1 /
// 233.0 on the T-token kernel, T = 6 B = 32 30.6 vs 38.6; at T = 2-4 the T-token read-only
// kernel leads (T = 4 B = 256: 155.6 vs 164.2 us, B = 32 27.3 vs 28.9; T = 2 B = 1 4.16 vs 5.12).
inline bool read_only_mma(const decode::Args& a) {
  return !a.update_state && a.intermediate == nullptr && a.T > kGramTokens && a.state_dtype == DType::f32 &&
         a.B * a.HV >= kMmaPipelinedMinHeads;
}

// Whether the tensor-core kernels (plain or pipelined) take the call. T = 5 with an fp32 pool
// below kMmaPipelinedMinHeads pairs: the plain kernel (ninth session, bf16 MMAs, one call: B = 1 /
// 2 / 4 5.38 / 6.49 / 8.93 us against 5.86 / 6.75 / 9.06 on the T-token kernel; from B = 16 on
// the T-token kernel leads, B = 16 23.6 vs 24.5 us pipelined, B = 256 281 vs 303).
inline bool uses_mma(const decode::Args& a) {
  if (!vk_mma_supported(a)) return false;
  if (read_only_mma(a)) return true;
  if (a.T >= kMmaMinTokens) return true;
  const int64_t heads = a.B * a.HV;
  if (a.state_dtype == DType::f32 && a.T == 5) return heads < kMmaPipelinedMinHeads;
  if (a.state_dtype != DType::f32 || a.T < kMmaFp32MinTokens) return false;
  return a.T > 6 || heads < kMmaPipelinedMinHeads || heads >= kMmaT6MinHeads;
}

// Whether a tensor-core call runs pipelined (step_mtp_mma_pipelined.cuh) or plain.
inline bool uses_pipelined_mma(const decode::Args& a) {
  const int64_t heads = a.B * a.HV;
  return a.T <= kMmaPipelinedMaxTokens && a.state_dtype == DType::f32 && heads >= kMmaPipelinedMinHeads &&
         (a.T < kMmaPipelinedMaxTokens || heads < kMmaPlainFromHeads || read_only_call(a));
}

// Which kernel serves the call: single-token calls without a cache take the decode kernels (the
// tile kept as loaded), except fp32 kv, where step_kv_kernel is as fast; the rest the T-token
// kernels.
inline bool uses_decode_kernel(const decode::Args& a) {
  return a.T == 1 && a.intermediate == nullptr && (a.layout == Layout::vk || a.state_dtype == DType::bf16);
}

// Measured on H200 with the shipped access policy (docs/notes/decode-mtp.md, rounds 6-8).
inline StepConfig choose_config(const decode::Args& a) {
  const int64_t heads = a.B * a.HV;
  const bool bf16 = a.state_dtype == DType::bf16;
  StepConfig c;
  if (a.layout == Layout::kv) {
    if (uses_decode_kernel(a)) c.depth = heads <= 64 ? 2 : 4;  // bf16 decode_kv_kernel
    else c.depth = bf16 || heads <= 32 ? 2 : 4;
  } else if (uses_decode_kernel(a)) {
    if (bf16) c.depth = heads <= 128 ? 2 : 4;
    else c.depth = heads <= 32 ? 1 : heads <= 128 ? 2 : 4;
  } else if (heads > 256) {
    c.depth = 4;
  } else {
    c.depth = !bf16 && heads <= 32 ? 1 : 2;
  }
  c.mma = uses_mma(a);
  return c;
}

inline int64_t warps_for(const decode::Args& a, int rows_or_cols_per_warp) {
  return a.B * a.HV * (a.V / rows_or_cols_per_warp);
}

template <class TS, int ROWS> void launch_decode_vk(const decode::Args& a, cudaStream_t st) {
  constexpr int rows_per_warp = 4 * ROWS;
  const int64_t warps = warps_for(a, rows_per_warp);
  const int smem = kWarps * stage_bytes(1, rows_per_warp);
  decode_vk_kernel<TS, ROWS><<<unsigned((warps + kWarps - 1) / kWarps), kWarps * 32, smem, st>>>(a);
}

template <class TS, int LPK> void launch_decode_kv(const decode::Args& a, cudaStream_t st) {
  constexpr int cols_per_warp = LPK * Chunk<TS>::E;
  const int64_t warps = warps_for(a, cols_per_warp);
  const int smem = kWarps * stage_bytes(1, cols_per_warp);
  decode_kv_kernel<TS, LPK><<<unsigned((warps + kWarps - 1) / kWarps), kWarps * 32, smem, st>>>(a);
}

// step_vk_read_only_kernel: at depth 4 four tiles per warp where V allows (two where V is a
// multiple of 32 only), 16 resident warps per SM for fp32 pools (118-128 registers), 20 for bf16
// (96). H200, 16/32 heads, T = 4, update off, B = 256, gdnbench A/Bs (docs/notes/decode-mtp.md):
// round 47, fp32 one tile (20 warps) / two 168.8 / 154.8 us; round 70, fp32 two / four / eight 155.8 /
// 145.8 / 145.5 us (eight +6 % at B = 32), bf16 two / four 143.9 / 129.3 us.
template <class TS> constexpr int kReadOnlyMinWarps = std::is_same_v<TS, float> ? 16 : 20;
constexpr int kReadOnlyTiles = 4;
template <class TS, int ROWS, int TILES> void launch_vk_read_only_tiles(const decode::Args& a, cudaStream_t st) {
  constexpr int rows_per_warp = 4 * ROWS * TILES;
  const int smem = stage_bytes(a.T, rows_per_warp, true) + kGramBytes;
  step_vk_read_only_kernel<TS, ROWS, TILES, kReadOnlyMinWarps<TS>>
      <<<unsigned(warps_for(a, rows_per_warp)), 32, smem, st>>>(a);
}
template <class TS, int ROWS> void launch_vk_read_only(const decode::Args& a, cudaStream_t st) {
  if constexpr (ROWS == 4) {
    if (a.V % (4 * ROWS * kReadOnlyTiles) == 0) return launch_vk_read_only_tiles<TS, ROWS, kReadOnlyTiles>(a, st);
    if (a.V % (4 * ROWS * 2) == 0) return launch_vk_read_only_tiles<TS, ROWS, 2>(a, st);
  }
  launch_vk_read_only_tiles<TS, ROWS, 1>(a, st);
}

template <class TS, int ROWS> void launch_vk(const decode::Args& a, cudaStream_t st) {
  if (vk_read_only_path(a)) return launch_vk_read_only<TS, ROWS>(a, st);
  constexpr int rows_per_warp = 4 * ROWS;
  const int tc = a.T < kVkStageTokens ? a.T : kVkStageTokens;
  step_vk_kernel<TS, ROWS><<<unsigned(warps_for(a, rows_per_warp)), 32, stage_bytes(tc, rows_per_warp, true), st>>>(a);
}

template <class TS, int LPK> void launch_kv(const decode::Args& a, cudaStream_t st) {
  constexpr int cols_per_warp = LPK * Chunk<TS>::E;
  const int64_t warps = warps_for(a, cols_per_warp);
  const int tc = a.T < kStageTokens ? a.T : kStageTokens;
  const int smem = kWarps * stage_bytes(tc, cols_per_warp);
  step_kv_kernel<TS, LPK><<<unsigned((warps + kWarps - 1) / kWarps), kWarps * 32, smem, st>>>(a);
}

// Persistent grid: as many one-warp blocks as fit on the GPU at once (at most one per tile).
template <class TS, bool READ_ONLY, bool TF32 = false>
void launch_vk_mma_pipelined_build(const decode::Args& a, cudaStream_t st) {
  // Registers budgeted for 11 warps per SM (184): against 12 (168) the update builds run
  // 1.5-5 % faster at T = 6, 7 and 8 (T = 7 B = 128 +0.8 %), read-only builds the same
  // (docs/notes/decode-mtp.md rounds 63 and 66). At 16 (128 registers) read-only spilled, 40 % slower.
  constexpr int kMinWarps = 11;
  auto kernel = step_vk_mma_pipelined_kernel<TS, InPlaceMem, 1, kMinWarps, false, READ_ONLY, TF32>;
  const int smem = mma_vk::pipelined_warp_bytes<TS>(a.T);
  int device = 0, sms = 0, per_sm = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 32, smem) != cudaSuccess || per_sm < 1)
    throw std::runtime_error("fast step: no occupancy for the pipelined tensor-core kernel");
  const int64_t tiles = a.B * a.HV * (a.V / mma_vk::kRows);
  kernel<<<unsigned(std::min<int64_t>(tiles, int64_t(per_sm) * sms)), 32, smem, st>>>(a);
}
template <class TS> void launch_vk_mma_pipelined(const decode::Args& a, cudaStream_t st) {
  if (read_only_call(a)) launch_vk_mma_pipelined_build<TS, true>(a, st);
  else if (a.B * a.HV >= kMmaTf32FromHeads) launch_vk_mma_pipelined_build<TS, false, true>(a, st);
  else launch_vk_mma_pipelined_build<TS, false>(a, st);
}

// Enqueues one call on `st`. Throws std::runtime_error on an unsupported depth or a launch error.
inline void launch_step(const decode::Args& a, const StepConfig& c, cudaStream_t st) {
  if (a.B == 0) return;
  const bool bf16 = a.state_dtype == DType::bf16;
  if (c.mma) {
    if (!vk_mma_supported(a)) throw std::runtime_error("fast step: the tensor-core kernel does not take this call");
    if (uses_pipelined_mma(a)) {
      launch_vk_mma_pipelined<float>(a, st);
    } else if (bf16) {
      launch_vk_mma<uint16_t, InPlaceMem, 1>(a, st);
    } else {
      launch_vk_mma<float, InPlaceMem, 1>(a, st);
    }
  } else if (uses_decode_kernel(a) && a.layout == Layout::kv) {
    switch (c.depth) {
      case 2: launch_decode_kv<uint16_t, 2>(a, st); break;
      case 4: launch_decode_kv<uint16_t, 4>(a, st); break;
      default: throw std::runtime_error("fast step: unsupported kv depth " + std::to_string(c.depth));
    }
  } else if (uses_decode_kernel(a)) {
    switch (c.depth * 2 + bf16) {
      case 2: launch_decode_vk<float, 1>(a, st); break;
      case 4: launch_decode_vk<float, 2>(a, st); break;
      case 8: launch_decode_vk<float, 4>(a, st); break;
      case 3: launch_decode_vk<uint16_t, 1>(a, st); break;
      case 5: launch_decode_vk<uint16_t, 2>(a, st); break;
      case 9: launch_decode_vk<uint16_t, 4>(a, st); break;
      default: throw std::runtime_error("fast step: unsupported vk depth " + std::to_string(c.depth));
    }
  } else if (a.layout == Layout::vk) {
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

// bf16 rounding of o (and of a bf16 pool) measured at <= 1.8e-3 relative L2; fp32 pools ~1e-7 on
// the CUDA-core and TF32 paths, up to ~1e-6 on the bf16 tensor-core form (6e-6 without l2norm:
// ninth session, .carry stress sweep), far below the threshold.
inline std::vector<Tolerance> step_fast_tolerances() { return {{"o", 4e-3}, {"pool", 4e-3}, {"intermediate", 4e-3}}; }

}  // namespace gdn::fast

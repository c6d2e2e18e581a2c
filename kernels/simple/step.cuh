// The simple decode/mtp kernel (decode is mtp with T = 1): one block per (row, value head,
// 32 value columns) loads its slice of the row's pool slot, runs the row's T tokens through
// the recurrence, optionally caches the state after every token, and writes the slot back.
// Shared by decode/cuda_simple and mtp/cuda_simple.
#pragma once

#include <fmt/format.h>

#include <string>

#include "simple/state_tile.cuh"
#include "core/cuda_check.h"
#include "core/state_format.h"
#include "core/registry.h"
#include "core/slot.h"
#include "decode/op.h"

namespace gdn::simple {


template <class In, class S> __global__ void __launch_bounds__(kThreads) step_simple_kernel(decode::Args a) {
  __shared__ TileSmem sm;
  const int64_t b = blockIdx.x;  // batch row
  const int h = blockIdx.y;      // value head
  const int hk = h / (a.HV / a.H);
  const TileGeom tile = tile_geom(a.K, a.V, a.layout);
  const int64_t head_elems = int64_t(a.K) * a.V;
  const In* q = reinterpret_cast<const In*>(a.q);
  const In* k = reinterpret_cast<const In*>(a.k);
  const In* v = reinterpret_cast<const In*>(a.v);
  In* o = reinterpret_cast<In*>(a.o);
  S* intermediate = static_cast<S*>(a.intermediate);

  const int64_t slot = slot_at(a.indices, a.index_dtype, b);
  if (slot < 0) {  // padding row: zero outputs, leave the pool alone
    for (int t = 0; t < a.T; ++t) {
      const int64_t row = b * a.T + t;
      if (threadIdx.x < tile.cols) o[(row * a.HV + h) * a.V + tile.v0 + threadIdx.x] = dev::from_float<In>(0.f);
      if (intermediate) store_zero_tile(intermediate + (row * a.HV + h) * head_elems, tile);
    }
    return;
  }

  S* state = static_cast<S*>(a.pool) + (slot * a.HV + h) * head_elems;
  // Rollback: start from the previous step's cache entry a - 1 (read before the first store).
  const int acc = a.accepted != nullptr ? a.accepted[b] : 0;
  load_state_tile(sm, acc > 0 ? intermediate + ((b * a.T + acc - 1) * a.HV + h) * head_elems : state, tile);
  for (int t = 0; t < a.T; ++t) {
    const int64_t row = b * a.T + t;  // token row of q, k, v, gate, o and intermediate
    const int64_t qk_row = (row * a.H + hk) * a.K, v_row = (row * a.HV + h) * a.V;
    load_token(sm, q + qk_row, k + qk_row, v + v_row, tile);
    __syncthreads();
    const float out = recurrent_step(sm, a.K, gate_at(a.gate, row, a.HV, h), a.l2norm, a.scale);
    if (threadIdx.x < tile.cols) o[v_row + tile.v0 + threadIdx.x] = dev::from_float<In>(out);
    if (intermediate) store_state_tile(sm, intermediate + (row * a.HV + h) * head_elems, tile);
  }
  if (a.update_state) store_state_tile(sm, state, tile);
}

inline std::string step_simple_supports(const Shape& s) {
  if (auto why = unsupported_8bit_state(s); !why.empty()) return why;
  if (s.dk > kMaxK) return fmt::format("K must be <= {} (got {})", kMaxK, s.dk);
  if (s.h_v > 65535) return fmt::format("h_v must be <= 65535 (got {})", s.h_v);
  return "";
}

template <class In> void launch_step_simple(const decode::Args& a, dim3 grid, cudaStream_t stream) {
  if (a.state_dtype == DType::bf16) step_simple_kernel<In, __nv_bfloat16><<<grid, kThreads, 0, stream>>>(a);
  else step_simple_kernel<In, float><<<grid, kThreads, 0, stream>>>(a);
}

// Enqueues the kernel for a decode or mtp problem on ctx.stream.
inline void step_simple_launch(const Shape& s, const TensorSet& t, const LaunchContext& ctx) {
  const decode::Args a = decode::make_args(s, t);
  const dim3 grid(unsigned(a.B), unsigned(a.HV), unsigned((a.V + kTileV - 1) / kTileV));
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  if (s.input_dtype == DType::f16) launch_step_simple<__half>(a, grid, stream);
  else launch_step_simple<__nv_bfloat16>(a, grid, stream);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace gdn::simple

// The recurrent building block of the simple CUDA variants: one thread block owns the K x 32
// slice (value columns v0 .. v0+31) of one head's state in shared memory and advances it one
// token at a time (docs/method.md 1). Lane j of every warp owns column j; warp w owns rows
// w, w + kWarps, ... so column reductions are a per-thread partial plus one pass over the warps.
#pragma once

#include <cstdint>

#include "common/gdn_math.cuh"
#include "core/types.h"

namespace gdn::simple {

constexpr int kTileV = 32;                 // value columns per block, one per lane
constexpr int kWarps = 8;                  // warps per block
constexpr int kThreads = 32 * kWarps;      // threads per block
constexpr int kMaxK = kThreads;            // one thread loads each q/k element

struct TileSmem {
  float state[kMaxK][kTileV + 1];  // [K][columns]; +1 pad keeps row and column walks conflict-free
  float q[kMaxK];
  float k[kMaxK];
  float v[kTileV];
  float pred[kWarps][kTileV];      // per-warp partials of S^T k
  float out[kWarps][kTileV];       // per-warp partials of S^T q
};

// Where this block's columns sit inside one head's K*V state block.
struct TileGeom {
  int K, V;
  int v0;    // first value column
  int cols;  // valid columns, <= kTileV
  Layout layout;
};

__device__ __forceinline__ TileGeom tile_geom(int K, int V, Layout layout) {
  const int v0 = int(blockIdx.z) * kTileV;
  return {K, V, v0, min(kTileV, V - v0), layout};
}

// Global element offset of state (row i, tile column j) within one head's block.
__device__ __forceinline__ int64_t state_offset(const TileGeom& t, int i, int j) {
  return t.layout == Layout::kv ? int64_t(i) * t.V + (t.v0 + j) : int64_t(t.v0 + j) * t.K + i;
}

// Threads walk the tile in the layout's contiguous direction so global accesses coalesce.
// Calls f(i, j) for every row i < K and column j < kTileV.
template <class F> __device__ __forceinline__ void for_each_tile_element(const TileGeom& t, F f) {
  const int n = t.K * kTileV;
  for (int e = threadIdx.x; e < n; e += kThreads) {
    if (t.layout == Layout::kv) f(e / kTileV, e % kTileV);
    else f(e % t.K, e / t.K);
  }
}

// Loads the tile of one head's state (nullptr = zero state); columns past `cols` are zeroed.
template <class S> __device__ void load_state_tile(TileSmem& sm, const S* head, const TileGeom& t) {
  for_each_tile_element(t, [&](int i, int j) {
    sm.state[i][j] = (head != nullptr && j < t.cols) ? dev::to_float(head[state_offset(t, i, j)]) : 0.f;
  });
  __syncthreads();
}

// Writes the tile back (rounded to S). Call after a __syncthreads() that follows the last update.
template <class S> __device__ void store_state_tile(const TileSmem& sm, S* head, const TileGeom& t) {
  for_each_tile_element(t, [&](int i, int j) {
    if (j < t.cols) head[state_offset(t, i, j)] = dev::from_float<S>(sm.state[i][j]);
  });
}

template <class S> __device__ void store_zero_tile(S* head, const TileGeom& t) {
  for_each_tile_element(t, [&](int i, int j) {
    if (j < t.cols) head[state_offset(t, i, j)] = dev::from_float<S>(0.f);
  });
}

// The gate of token row `row`, value head h: g (<= 0) and beta.
__device__ __forceinline__ dev::Gate gate_at(const GateArgs& ga, int64_t row, int HV, int h) {
  return dev::gate_of(ga, dev::load_gate(ga, row, h, HV));
}

// Stages one token's q and k (K values of the q/k head) and this tile's v columns in shared
// memory. The caller synchronises before recurrent_step reads them.
template <class In>
__device__ __forceinline__ void load_token(TileSmem& sm, const In* q, const In* k, const In* v, const TileGeom& t) {
  const int i = threadIdx.x;
  if (i < t.K) {
    sm.q[i] = dev::to_float(q[i]);
    sm.k[i] = dev::to_float(k[i]);
  }
  if (i < kTileV) sm.v[i] = i < t.cols ? dev::to_float(v[t.v0 + i]) : 0.f;
}

// One token on the tile: decay, predict, delta, update, output. Returns scale * (S^T q)[lane]
// from the updated state (the same value in every warp). Ends with a __syncthreads(), after
// which the updated tile may be stored and the next token loaded.
__device__ __forceinline__ float recurrent_step(TileSmem& sm, int K, dev::Gate gate, bool l2norm, float scale) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  // Every warp computes both norms itself (bit-identical results), which saves a barrier.
  const float inv_q = l2norm ? dev::inv_l2norm(sm.q, K) : 1.f;
  const float inv_k = l2norm ? dev::inv_l2norm(sm.k, K) : 1.f;
  const float decay = expf(gate.g);

  float p = 0.f;
  for (int i = warp; i < K; i += kWarps) {
    const float s = sm.state[i][lane] * decay;
    sm.state[i][lane] = s;
    p += s * sm.k[i];
  }
  sm.pred[warp][lane] = p * inv_k;
  __syncthreads();

  float pred = 0.f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) pred += sm.pred[w][lane];
  const float d = gate.beta * (sm.v[lane] - pred);

  float o = 0.f;
  for (int i = warp; i < K; i += kWarps) {
    const float s = sm.state[i][lane] + sm.k[i] * inv_k * d;
    sm.state[i][lane] = s;
    o += s * sm.q[i];
  }
  sm.out[warp][lane] = o * inv_q;
  __syncthreads();

  float out = 0.f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) out += sm.out[w][lane];
  return scale * out;
}

}  // namespace gdn::simple

// The Gated DeltaNet recurrence (docs/method.md 1) in plain loops over one (sequence or row,
// value head) at a time: the pieces the example plugins' launches are made of. fp32 throughout;
// bf16 values are widened on load and rounded to nearest even on store.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gdnbench/kernel.h"

namespace example {

inline float from_bf16(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // NaN stays NaN
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// The decay exp(g) and write strength beta of one (token row, value head), from either gate form.
struct Gate {
  float decay, beta;
};

inline Gate gate_at(const gdn_args& a, int64_t row, int h) {
  const int HV = a.shape->h_v;
  const int64_t i = row * HV + h;
  if (a.shape->gate == GDN_GATE_LOG) return {std::exp(a.g[i]), a.beta[i]};
  const float x = from_bf16(a.a[i]) + a.dt_bias[h];
  const float softplus = x > 20.f ? x : std::log1p(std::exp(x));
  const float g = -std::exp(a.A_log[h]) * softplus;
  return {std::exp(g), 1.f / (1.f + std::exp(-from_bf16(a.b[i])))};
}

// Pool slot of row (or sequence) r, or -1.
inline int64_t slot_at(const gdn_args& a, int64_t r) {
  return a.shape->index_dtype == GDN_DTYPE_I32 ? static_cast<const int32_t*>(a.indices)[r]
                                               : static_cast<const int64_t*>(a.indices)[r];
}

// One head's state as S[i * V + j] (i over K, j over V), whatever the layout stored.
struct State {
  int K, V;
  std::vector<float> S;
  State(int k, int v) : K(k), V(v), S(std::size_t(k) * v, 0.f) {}

  // From `src`, HV-th head slice of a [.., HV, S] tensor in `dtype` (F32 or BF16), `layout`.
  void load(const void* src, int dtype, int layout) {
    for (int i = 0; i < K; ++i)
      for (int j = 0; j < V; ++j) {
        const std::size_t at = layout == GDN_LAYOUT_KV ? std::size_t(i) * V + j : std::size_t(j) * K + i;
        S[std::size_t(i) * V + j] = dtype == GDN_DTYPE_BF16 ? from_bf16(static_cast<const uint16_t*>(src)[at])
                                                              : static_cast<const float*>(src)[at];
      }
  }
  void store(void* dst, int dtype, int layout) const {
    for (int i = 0; i < K; ++i)
      for (int j = 0; j < V; ++j) {
        const std::size_t at = layout == GDN_LAYOUT_KV ? std::size_t(i) * V + j : std::size_t(j) * K + i;
        const float x = S[std::size_t(i) * V + j];
        if (dtype == GDN_DTYPE_BF16) static_cast<uint16_t*>(dst)[at] = to_bf16(x);
        else static_cast<float*>(dst)[at] = x;
      }
  }

  // One token: decay, predict p = S^T k, correct d = beta (v - p), write S += k d^T, then read
  // o = scale S^T q. q and k are already normalised.
  void step(const float* q, const float* k, const float* v, Gate gate, float scale, float* o) {
    for (float& x : S) x *= gate.decay;
    std::vector<float> d(std::size_t(V), 0.f);
    for (int i = 0; i < K; ++i)
      for (int j = 0; j < V; ++j) d[j] += S[std::size_t(i) * V + j] * k[i];
    for (int j = 0; j < V; ++j) d[j] = gate.beta * (v[j] - d[j]);
    for (int i = 0; i < K; ++i)
      for (int j = 0; j < V; ++j) S[std::size_t(i) * V + j] += k[i] * d[j];
    for (int j = 0; j < V; ++j) {
      float acc = 0.f;
      for (int i = 0; i < K; ++i) acc += S[std::size_t(i) * V + j] * q[i];
      o[j] = scale * acc;
    }
  }
};

// q or k of one token row and q/k head, widened and (l2norm) normalised: x / sqrt(sum(x^2) + 1e-6).
inline std::vector<float> load_qk(const gdn_args& a, const void* base, int64_t row, int head) {
  const int K = a.shape->dk;
  const uint16_t* x = static_cast<const uint16_t*>(base) + (row * a.shape->h_qk + head) * K;
  std::vector<float> out(static_cast<std::size_t>(K));
  float sum = 0.f;
  for (int i = 0; i < K; ++i) out[i] = from_bf16(x[i]), sum += out[i] * out[i];
  if (a.shape->l2norm)
    for (float& e : out) e /= std::sqrt(sum + 1e-6f);
  return out;
}

// v of one token row and value head, widened.
inline std::vector<float> load_v(const gdn_args& a, int64_t row, int h) {
  const int V = a.shape->dv;
  const uint16_t* x = static_cast<const uint16_t*>(a.v) + (row * a.shape->h_v + h) * V;
  std::vector<float> out(static_cast<std::size_t>(V));
  for (int j = 0; j < V; ++j) out[j] = from_bf16(x[j]);
  return out;
}

inline void store_o(const gdn_args& a, int64_t row, int h, const float* o) {
  uint16_t* dst = static_cast<uint16_t*>(a.o) + (row * a.shape->h_v + h) * a.shape->dv;
  for (int j = 0; j < a.shape->dv; ++j) dst[j] = to_bf16(o[j]);
}

// Elements of one head's state.
inline int64_t head_state(const gdn_shape& s) { return int64_t(s.dk) * s.dv; }

}  // namespace example

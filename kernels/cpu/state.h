// The fp32 state update of one token and one value head (docs/method.md 1), written as plain loops
// over the contiguous dimension so g++ -O3 vectorises them, plus the state copies around it.
//
// The decay is folded into the update instead of a separate pass over S:
//   p = exp(g) (S^T k);  d = beta (v - p);  S <- exp(g) S + k d^T;  o = S^T q  (q pre-scaled).
// kv ([K][V]): pass 1 only reads S (p, blocks of rows), pass 2 rewrites S once and accumulates o.
// vk ([V][K]): per row, a dot product, then one sweep that updates the row and dots it with q.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/half.h"
#include "core/types.h"

// The hot loops are also compiled for AVX2 + FMA (x86-64-v3); the loader picks that
// clone on CPUs that have it (1.4-1.8x here) and the portable SSE2 build everywhere else.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GDN_CPU_STATE_LOOP __attribute__((target_clones("arch=x86-64-v3", "default"))) inline
#else
#define GDN_CPU_STATE_LOOP inline
#endif

namespace gdn::cpu {

// Lanes of the partial sums in the K-contiguous dot products: independent accumulators let the
// compiler keep them in vector registers without reassociating a scalar sum.
constexpr int kDotLanes = 16;

// S rows a kv pass handles at once, so d and o are loaded and stored once per kRowBlock rows.
constexpr int kRowBlock = 4;
// How far ahead (in kv rows) the first kv pass prefetches.
constexpr int kPrefetchRows = 16;

// One token of one value head: q already scaled, decay = exp(g).
struct StepInput {
  const float* q;
  const float* k;
  const float* v;
  float decay;
  float beta;
};

// Asks for the cache lines of [p, p + bytes) ahead of a read-modify-write sweep. The kernels walk
// several rows at once, a pattern the hardware prefetchers do not follow when the state streams
// from memory (decode): prefetching the next rows roughly doubles that case.
inline void prefetch_for_write(const void* p, int64_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (int64_t i = 0; i < bytes; i += 64) __builtin_prefetch(c + i, 1);
}

// kv layout: S is [K][V], V contiguous. `scratch` holds V floats; o receives V floats.
GDN_CPU_STATE_LOOP void step_kv(float* __restrict S, int K, int V, const StepInput& in, float* __restrict scratch,
                    float* __restrict o) {
  const float* __restrict k = in.k;
  const float* __restrict q = in.q;
  float* __restrict d = scratch;

  // Pass 1: d <- S^T k.
  for (int j = 0; j < V; ++j) d[j] = 0.f;
  int i = 0;
  for (; i + kRowBlock <= K; i += kRowBlock) {
    if (i + kPrefetchRows + kRowBlock <= K) prefetch_for_write(S + int64_t(i + kPrefetchRows) * V, kRowBlock * V * 4);
    const float* __restrict s0 = S + int64_t(i) * V;
    const float *__restrict s1 = s0 + V, *__restrict s2 = s1 + V, *__restrict s3 = s2 + V;
    const float k0 = k[i], k1 = k[i + 1], k2 = k[i + 2], k3 = k[i + 3];
    for (int j = 0; j < V; ++j) d[j] += k0 * s0[j] + k1 * s1[j] + k2 * s2[j] + k3 * s3[j];
  }
  for (; i < K; ++i) {
    const float* __restrict s = S + int64_t(i) * V;
    const float ki = k[i];
    for (int j = 0; j < V; ++j) d[j] += ki * s[j];
  }
  for (int j = 0; j < V; ++j) d[j] = in.beta * (in.v[j] - in.decay * d[j]);

  // Pass 2: S <- decay S + k d^T, o <- S^T q.
  const float a = in.decay;
  for (int j = 0; j < V; ++j) o[j] = 0.f;
  i = 0;
  for (; i + kRowBlock <= K; i += kRowBlock) {
    float* __restrict s0 = S + int64_t(i) * V;
    float *__restrict s1 = s0 + V, *__restrict s2 = s1 + V, *__restrict s3 = s2 + V;
    const float k0 = k[i], k1 = k[i + 1], k2 = k[i + 2], k3 = k[i + 3];
    const float q0 = q[i], q1 = q[i + 1], q2 = q[i + 2], q3 = q[i + 3];
    for (int j = 0; j < V; ++j) {
      const float x0 = a * s0[j] + k0 * d[j], x1 = a * s1[j] + k1 * d[j];
      const float x2 = a * s2[j] + k2 * d[j], x3 = a * s3[j] + k3 * d[j];
      s0[j] = x0, s1[j] = x1, s2[j] = x2, s3[j] = x3;
      o[j] += q0 * x0 + q1 * x1 + q2 * x2 + q3 * x3;
    }
  }
  for (; i < K; ++i) {
    float* __restrict s = S + int64_t(i) * V;
    const float ki = k[i], qi = q[i];
    for (int j = 0; j < V; ++j) {
      const float x = a * s[j] + ki * d[j];
      s[j] = x;
      o[j] += qi * x;
    }
  }
}

// Sum of x[i] * y[i] over n elements with kDotLanes independent partial sums.
inline float dot(const float* __restrict x, const float* __restrict y, int n) {
  float acc[kDotLanes] = {};
  int i = 0;
  for (; i + kDotLanes <= n; i += kDotLanes)
    for (int l = 0; l < kDotLanes; ++l) acc[l] += x[i + l] * y[i + l];
  float sum = 0.f;
  for (; i < n; ++i) sum += x[i] * y[i];
  for (int l = 0; l < kDotLanes; ++l) sum += acc[l];
  return sum;
}

// s <- a s + b k (n elements) and returns s . q, in one sweep.
inline float update_and_dot(float* __restrict s, int n, float a, float b, const float* __restrict k,
                            const float* __restrict q) {
  float acc[kDotLanes] = {};
  int i = 0;
  for (; i + kDotLanes <= n; i += kDotLanes) {
    for (int l = 0; l < kDotLanes; ++l) {
      const float x = a * s[i + l] + b * k[i + l];
      s[i + l] = x;
      acc[l] += x * q[i + l];
    }
  }
  float sum = 0.f;
  for (; i < n; ++i) {
    const float x = a * s[i] + b * k[i];
    s[i] = x;
    sum += x * q[i];
  }
  for (int l = 0; l < kDotLanes; ++l) sum += acc[l];
  return sum;
}

// vk layout: S is [V][K], K contiguous. Row j (value column j of the math's S) evolves on its
// own: p = s . k, d = beta (v_j - decay p), s <- decay s + d k, o_j = s . q. A caller can
// therefore run every token of a few rows while they sit in L1.
GDN_CPU_STATE_LOOP float step_vk_row(float* __restrict s, int K, const StepInput& in, int j) {
  const float d = in.beta * (in.v[j] - in.decay * dot(s, in.k, K));
  return update_and_dot(s, K, in.decay, d, in.k, in.q);
}

// vk rows handled together: their dependency chains overlap and k, q are loaded once per block.
constexpr int kVkRows = 4;

// GCC vector extensions (8 floats: one AVX register, two SSE ones in the portable clone) where
// auto-vectorisation gives up on interleaved rows. They only live inside inlined helpers, so the
// AVX-without-AVX ABI warning does not apply.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float Vec8 __attribute__((vector_size(32)));
inline Vec8 load8(const float* p) {
  Vec8 x;
  std::memcpy(&x, p, sizeof x);
  return x;
}
inline void store8(float* p, const Vec8& x) { std::memcpy(p, &x, sizeof x); }
inline float hsum8(const Vec8& x) { return ((x[0] + x[4]) + (x[1] + x[5])) + ((x[2] + x[6]) + (x[3] + x[7])); }

// Rows j .. j+3 (at s, K apart) for one token; o_j .. o_j+3 go to o[0..3].
GDN_CPU_STATE_LOOP void step_vk_rows4(float* __restrict s, int K, const StepInput& in, int j, float* __restrict o) {
  float* __restrict s0 = s;
  float *__restrict s1 = s0 + K, *__restrict s2 = s1 + K, *__restrict s3 = s2 + K;
  const float* __restrict k = in.k;
  const float* __restrict q = in.q;
  const int K8 = K / 8 * 8;
  Vec8 p0 = {}, p1 = {}, p2 = {}, p3 = {};
  for (int i = 0; i < K8; i += 8) {
    const Vec8 kk = load8(k + i);
    p0 += load8(s0 + i) * kk, p1 += load8(s1 + i) * kk, p2 += load8(s2 + i) * kk, p3 += load8(s3 + i) * kk;
  }
  float t0 = hsum8(p0), t1 = hsum8(p1), t2 = hsum8(p2), t3 = hsum8(p3);
  for (int i = K8; i < K; ++i) t0 += s0[i] * k[i], t1 += s1[i] * k[i], t2 += s2[i] * k[i], t3 += s3[i] * k[i];

  const float a = in.decay, b = in.beta;
  const float d0 = b * (in.v[j] - a * t0), d1 = b * (in.v[j + 1] - a * t1);
  const float d2 = b * (in.v[j + 2] - a * t2), d3 = b * (in.v[j + 3] - a * t3);
  Vec8 r0 = {}, r1 = {}, r2 = {}, r3 = {};
  for (int i = 0; i < K8; i += 8) {
    const Vec8 kk = load8(k + i), qq = load8(q + i);
    const Vec8 x0 = a * load8(s0 + i) + d0 * kk, x1 = a * load8(s1 + i) + d1 * kk;
    const Vec8 x2 = a * load8(s2 + i) + d2 * kk, x3 = a * load8(s3 + i) + d3 * kk;
    store8(s0 + i, x0), store8(s1 + i, x1), store8(s2 + i, x2), store8(s3 + i, x3);
    r0 += x0 * qq, r1 += x1 * qq, r2 += x2 * qq, r3 += x3 * qq;
  }
  float u0 = hsum8(r0), u1 = hsum8(r1), u2 = hsum8(r2), u3 = hsum8(r3);
  for (int i = K8; i < K; ++i) {
    const float x0 = a * s0[i] + d0 * k[i], x1 = a * s1[i] + d1 * k[i];
    const float x2 = a * s2[i] + d2 * k[i], x3 = a * s3[i] + d3 * k[i];
    s0[i] = x0, s1[i] = x1, s2[i] = x2, s3[i] = x3;
    u0 += x0 * q[i], u1 += x1 * q[i], u2 += x2 * q[i], u3 += x3 * q[i];
  }
  o[0] = u0, o[1] = u1, o[2] = u2, o[3] = u3;
}
#pragma GCC diagnostic pop

// `rows` (<= kVkRows) consecutive vk rows starting at row j, stored at s, for one token.
inline void step_vk_rows(float* s, int K, int rows, const StepInput& in, int j, float* o) {
  if (rows == kVkRows) return step_vk_rows4(s, K, in, j, o);
  for (int r = 0; r < rows; ++r) o[r] = step_vk_row(s + int64_t(r) * K, K, in, j + r);
}

// State slots in a pool's dtype (f32 or bf16) <-> an fp32 working buffer. The bf16 loops work
// on the bit patterns (same rounding as core/half.h, NaN kept quiet) with a select instead of a
// branch, so they vectorise like the fp32 copies.
GDN_CPU_STATE_LOOP void load_state(DType d, const void* src, int64_t n, float* __restrict dst) {
  if (d == DType::bf16) {
    const auto* __restrict s = static_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = bits_to_float(uint32_t(s[i]) << 16);
  } else {
    const auto* __restrict s = static_cast<const float*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = s[i];
  }
}

GDN_CPU_STATE_LOOP void store_state(DType d, const float* __restrict src, int64_t n, void* dst) {
  if (d == DType::bf16) {
    auto* __restrict o = static_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t u = float_to_bits(src[i]);
      const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
      o[i] = uint16_t((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : rounded);
    }
  } else {
    auto* o = static_cast<float*>(dst);
    for (int64_t i = 0; i < n; ++i) o[i] = src[i];
  }
}

// dst [cols][rows] <- src [rows][cols] (fp32), in tiles so both sides stay in cache lines.
inline void transpose(const float* __restrict src, int rows, int cols, float* __restrict dst) {
  constexpr int kTile = 16;
  for (int r0 = 0; r0 < rows; r0 += kTile)
    for (int c0 = 0; c0 < cols; c0 += kTile)
      for (int r = r0; r < std::min(rows, r0 + kTile); ++r)
        for (int c = c0; c < std::min(cols, c0 + kTile); ++c) dst[int64_t(c) * rows + r] = src[int64_t(r) * cols + c];
}

// Writes n zeros of dtype d (f32, a 16-bit float or 8-bit codes: all-zero bits in each).
inline void store_zeros(DType d, int64_t n, void* dst) { std::memset(dst, 0, size_t(n) * dtype_size(d)); }

}  // namespace gdn::cpu

// Per-token preparation for the CPU variants (docs/method.md 1): 16-bit rows widened to fp32, the
// optional q/k L2 norm, and the gate (either form) turned into a decay factor and beta, all in fp32.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/gate_args.h"
#include "core/half.h"
#include "core/types.h"

namespace gdn::cpu {

// Widens n 16-bit floats of dtype d (bf16 or f16). The dtype test sits outside the loop.
inline void load_half_row(DType d, const uint16_t* src, int n, float* dst) {
  if (d == DType::f16) {
    for (int i = 0; i < n; ++i) dst[i] = f16_to_float(src[i]);
  } else {
    for (int i = 0; i < n; ++i) dst[i] = bf16_to_float(src[i]);
  }
}

// Rounds n floats to dtype d (round to nearest even).
inline void store_half_row(DType d, const float* src, int n, uint16_t* dst) {
  if (d == DType::f16) {
    for (int i = 0; i < n; ++i) dst[i] = float_to_f16(src[i]);
  } else {
    for (int i = 0; i < n; ++i) dst[i] = float_to_bf16(src[i]);
  }
}

// x <- x * factor / sqrt(sum(x^2) + eps) when `normalize`, else x <- x * factor.
inline void normalize_and_scale(float* x, int n, bool normalize, float factor) {
  if (normalize) {
    float sum = 0.f;
    for (int i = 0; i < n; ++i) sum += x[i] * x[i];
    factor /= std::sqrt(sum + kL2NormEpsF);
  }
  for (int i = 0; i < n; ++i) x[i] *= factor;
}

// Loads the q and k rows of one token for the kernel: widened, normalised, q pre-multiplied by
// the output scale (so the output pass needs no extra multiply).
inline void load_qk(DType d, const uint16_t* q_src, const uint16_t* k_src, int K, bool l2norm, float scale,
                    float* q, float* k) {
  load_half_row(d, q_src, K, q);
  load_half_row(d, k_src, K, k);
  normalize_and_scale(q, K, l2norm, scale);
  normalize_and_scale(k, K, l2norm, 1.f);
}

struct TokenGate {
  float decay;  // exp(g)
  float beta;
};

// Gate of token row `row`, value head h (HV heads), from either form, in fp32.
inline TokenGate gate_at(const GateArgs& gate, int64_t row, int HV, int h) {
  const int64_t i = row * HV + h;
  if (gate.form == GateForm::log) return {std::exp(gate.g[i]), gate.beta[i]};
  const float x = bf16_to_float(gate.a[i]) + gate.dt_bias[h];
  const float softplus = x > 20.f ? x : std::log1p(std::exp(x));
  const float g = -std::exp(gate.A_log[h]) * softplus;
  const float beta = 1.f / (1.f + std::exp(-bf16_to_float(gate.b[i])));
  return {std::exp(g), beta};
}

}  // namespace gdn::cpu

// decode/cpu_broken: a TEST-ONLY variant with a realistic bug — the output is read from the
// state BEFORE the rank-1 update (o = scale * S_decayed^T q). Verification must reject it; the
// tests use it to prove that `verify` fails with exit code 2. Compiled only into the test
// executables and gdnbench-testing, never into gdnbench; never matched by a wildcard.
#include <cmath>
#include <vector>

#include "core/slot.h"
#include "core/half.h"
#include "core/registry.h"
#include "decode/op.h"
#include "reference/reference.h"

namespace gdn {
namespace {

void launch(const Shape& s, const TensorSet& t, const LaunchContext&) {
  const auto a = decode::make_args(s, t);
  const int64_t S = int64_t(a.K) * a.V;
  std::vector<float> st(static_cast<size_t>(S));
  for (int64_t b = 0; b < a.B; ++b)
    for (int h = 0; h < a.HV; ++h) {
      const int64_t slot = slot_at(a.indices, a.index_dtype, b);
      uint16_t* o = a.o + (b * a.HV + h) * a.V;
      if (slot < 0) {
        for (int j = 0; j < a.V; ++j) o[j] = 0;
        continue;
      }
      float* pool = static_cast<float*>(a.pool) + (slot * a.HV + h) * S;  // f32 pools only (supports)
      const int hk = h / (a.HV / a.H);
      std::vector<float> q(size_t(a.K)), k(size_t(a.K));
      double nq = 0, nk = 0;
      for (int i = 0; i < a.K; ++i) {
        q[size_t(i)] = bf16_to_float(a.q[(b * a.H + hk) * a.K + i]);
        k[size_t(i)] = bf16_to_float(a.k[(b * a.H + hk) * a.K + i]);
        nq += q[size_t(i)] * q[size_t(i)], nk += k[size_t(i)] * k[size_t(i)];
      }
      const float rq = a.l2norm ? float(1 / std::sqrt(nq + kL2NormEps)) : 1.f, rk = a.l2norm ? float(1 / std::sqrt(nk + kL2NormEps)) : 1.f;
      auto gv = ref::gate_at(s, t, b, h);
      const float decay = float(std::exp(gv.g)), beta = float(gv.beta);
      // S[j][i] with j over V and i over K for the vk layout; [i][j] for kv.
      auto at = [&](int i, int j) -> float& { return a.layout == Layout::vk ? pool[j * a.K + i] : pool[i * a.V + j]; };
      for (int j = 0; j < a.V; ++j) {
        float p = 0, oq = 0;
        for (int i = 0; i < a.K; ++i) {
          at(i, j) *= decay;
          p += at(i, j) * k[size_t(i)] * rk;
          oq += at(i, j) * q[size_t(i)] * rq;  // BUG: output taken before the update
        }
        const float d = beta * (bf16_to_float(a.v[(b * a.HV + h) * a.V + j]) - p);
        for (int i = 0; i < a.K; ++i) at(i, j) += k[size_t(i)] * rk * d;
        o[j] = float_to_bf16(a.scale * oq);
      }
    }
}

const VariantRegistration reg{Variant{
    "decode/cpu_broken", OpKind::decode, Backend::cpu, 0, 1000,
    "TEST ONLY: reads the output from the pre-update state (verification must fail)",
    [](const Shape& s) -> std::string {
      if (s.state_dtype != DType::f32) return "f32 pools only";
      if (s.input_dtype != DType::bf16) return "bf16 inputs only";
      return "";
    },
    launch, {}, true}};

}  // namespace
}  // namespace gdn

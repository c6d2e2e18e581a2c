// decode/cpu_q8_truncating: a TEST-ONLY variant with a realistic 8-bit pool bug: the stored codes
// are rounded toward zero (a cvt.rz where the contract says round to nearest even), everything
// else as decode/cpu. Verification against the quantized reference must reject it. Compiled only
// into the test executables and gdnbench-testing, never into gdnbench.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/half.h"
#include "core/registry.h"
#include "core/slot.h"
#include "core/state_quant.h"
#include "decode/op.h"
#include "reference/reference.h"

namespace gdn {
namespace {

// The bug: the code of y rounded toward zero instead of to nearest.
uint8_t truncated_code(DType d, float y) {
  if (d == DType::i8) return static_cast<uint8_t>(static_cast<int8_t>(std::clamp(std::trunc(y), -127.f, 127.f)));
  uint8_t c = quant::float_to_fp8e4m3(y);
  if ((c & 0x7f) != 0 && std::fabs(quant::fp8e4m3_to_float(c)) > std::fabs(y)) c = uint8_t((c & 0x80) | ((c & 0x7f) - 1));
  return c;
}

void normalised(const uint16_t* x, int n, bool l2norm, float mul, std::vector<float>& out) {
  double ss = 0;
  for (int i = 0; i < n; ++i) out[size_t(i)] = bf16_to_float(x[i]), ss += double(out[size_t(i)]) * out[size_t(i)];
  const float r = l2norm ? float(1 / std::sqrt(ss + kL2NormEps)) : 1.f;
  for (auto& e : out) e *= r * mul;
}

void launch(const Shape& s, const TensorSet& t, const LaunchContext&) {
  const auto a = decode::make_args(s, t);
  std::vector<float> q(size_t(a.K)), k(size_t(a.K)), row(size_t(a.K));
  for (int64_t b = 0; b < a.B; ++b)
    for (int h = 0; h < a.HV; ++h) {
      uint16_t* o = a.o + (b * a.HV + h) * a.V;
      const int64_t slot = slot_at(a.indices, a.index_dtype, b);
      if (slot < 0) {
        std::fill_n(o, a.V, uint16_t{0});
        continue;
      }
      const int hk = h / (a.HV / a.H);
      normalised(a.q + (b * a.H + hk) * a.K, a.K, a.l2norm, a.scale, q);
      normalised(a.k + (b * a.H + hk) * a.K, a.K, a.l2norm, 1.f, k);
      const auto g = ref::gate_at(s, t, b, h);
      const float decay = float(std::exp(g.g)), beta = float(g.beta);
      for (int j = 0; j < a.V; ++j) {
        const int64_t r = (slot * a.HV + h) * a.V + j;  // row of the pool (64-bit)
        auto* codes = static_cast<uint8_t*>(a.pool) + r * a.K;
        quant::dequantize_row(a.state_dtype, codes, a.pool_scale[r], a.K, row.data());
        float p = 0, out = 0, absmax = 0;
        for (int i = 0; i < a.K; ++i) p += row[size_t(i)] * k[size_t(i)];
        const float d = beta * (bf16_to_float(a.v[(b * a.HV + h) * a.V + j]) - decay * p);
        for (int i = 0; i < a.K; ++i) {
          row[size_t(i)] = decay * row[size_t(i)] + d * k[size_t(i)];
          out += row[size_t(i)] * q[size_t(i)], absmax = std::max(absmax, std::fabs(row[size_t(i)]));
        }
        o[j] = float_to_bf16(out);
        const quant::RowScale rs = quant::row_scale(a.state_dtype, absmax);
        for (int i = 0; i < a.K; ++i) codes[i] = truncated_code(a.state_dtype, row[size_t(i)] * rs.inv);
        a.pool_scale[r] = rs.scale;
      }
    }
}

const VariantRegistration reg{Variant{
    "decode/cpu_q8_truncating", OpKind::decode, Backend::cpu, 0, 1000,
    "TEST ONLY: 8-bit pool codes rounded toward zero (verification must fail)",
    [](const Shape& s) -> std::string {
      if (!quant::is_8bit(s.state_dtype)) return "8-bit pools only";
      if (s.input_dtype != DType::bf16) return "bf16 inputs only";
      return "";
    },
    launch, {}, true}};

}  // namespace
}  // namespace gdn

// The reference side of the 8-bit state pools (docs/method.md 2.5): reading a quantized slot and
// the round trip a stored state goes through, with the host quantizer every path shares.
#include <stdexcept>
#include <string>
#include <vector>

#include "core/state_quant.h"
#include "reference/detail.h"
#include "reference/reference.h"

namespace gdn::ref {

double load_state_value(const Tensor& t, const Tensor* row_scales, int64_t i) {
  if (!quant::is_8bit(t.spec.dtype)) return load(t, i);
  if (row_scales == nullptr) throw std::invalid_argument("8-bit state '" + t.spec.name + "' read without its scales");
  const int64_t K = t.spec.dims.back();
  return double(quant::decode(t.spec.dtype, t.as<const uint8_t>()[i])) * double(row_scales->as<const float>()[i / K]);
}

namespace detail {

Mat load_quantized_state(const Tensor& codes, const Tensor& scales, int64_t offset, int K, int V) {
  if (!quant::is_8bit(codes.spec.dtype))
    throw std::invalid_argument("tensor '" + codes.spec.name + "' is not an 8-bit state");
  Mat S(K, V);  // column v = value row v of the vk slot
  const auto* c = codes.as<const uint8_t>() + offset;
  const float* row_scale = scales.as<const float>() + offset / K;
  for (int v = 0; v < V; ++v)
    for (int k = 0; k < K; ++k)
      S(k, v) = double(quant::decode(codes.spec.dtype, c[int64_t(v) * K + k])) * double(row_scale[v]);
  return S;
}

Mat quantized(const Mat& S, DType format) {
  Mat out(S.rows(), S.cols());
  std::vector<float> row(size_t(S.rows()));
  std::vector<uint8_t> codes(size_t(S.rows()));
  for (Eigen::Index v = 0; v < S.cols(); ++v) {
    for (Eigen::Index k = 0; k < S.rows(); ++k) row[size_t(k)] = float(S(k, v));
    quant::round_trip_row(format, row.data(), int64_t(row.size()), codes.data());
    for (Eigen::Index k = 0; k < S.rows(); ++k) out(k, v) = double(row[size_t(k)]);
  }
  return out;
}

}  // namespace detail
}  // namespace gdn::ref

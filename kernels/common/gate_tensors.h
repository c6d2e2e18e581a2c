// Gate tensors of either form for `rows` token rows (docs/method.md 1), and their byte count.
#pragma once

#include <string>
#include <vector>

#include "common/gate_args.h"

#include "core/shape.h"
#include "core/tensor.h"

namespace gdn {

inline void append_gate_tensors(std::vector<TensorSpec>& out, const Shape& s, std::vector<int64_t> row_dims) {
  auto rows = row_dims;
  rows.push_back(s.h_v);
  if (s.gate == GateForm::log) {
    out.push_back({"g", DType::f32, rows, Role::input, Fill::log_gate});
    out.push_back({"beta", DType::f32, rows, Role::input, Fill::beta});
  } else {
    out.push_back({"A_log", DType::f32, {s.h_v}, Role::input, Fill::a_log});
    out.push_back({"a", DType::bf16, rows, Role::input, Fill::raw_a});
    out.push_back({"dt_bias", DType::f32, {s.h_v}, Role::input, Fill::dt_bias});
    out.push_back({"b", DType::bf16, rows, Role::input, Fill::raw_b});
  }
}

// Bytes of the gate inputs for `token_rows` rows: log 8 per (row, head); raw 4 per (row, head)
// plus A_log and dt_bias.
inline double gate_bytes(const Shape& s, double token_rows) {
  if (s.gate == GateForm::log) return 8.0 * token_rows * s.h_v;
  return 4.0 * token_rows * s.h_v + 8.0 * s.h_v;
}

inline GateArgs make_gate_args(const Shape& s, const TensorSet& t) {
  GateArgs g;
  g.form = s.gate;
  g.g = t.ptr<const float>("g");
  g.beta = t.ptr<const float>("beta");
  g.A_log = t.ptr<const float>("A_log");
  g.a = t.ptr<const uint16_t>("a");
  g.dt_bias = t.ptr<const float>("dt_bias");
  g.b = t.ptr<const uint16_t>("b");
  return g;
}

}  // namespace gdn

#include "core/op.h"

#include <fmt/format.h>

#include <stdexcept>

namespace gdn {

const std::vector<const OpDef*>& all_ops() {
  static const std::vector<const OpDef*> ops{&kPrefillOp, &kDecodeOp, &kMtpOp};
  return ops;
}

const OpDef& op_def(OpKind k) {
  for (auto* op : all_ops())
    if (op->kind == k) return *op;
  throw std::logic_error("no OpDef for op");
}

std::string validate_common(const Shape& s) {
  if (s.h_qk < 1 || s.h_v < 1) return fmt::format("heads must be >= 1 (got {}/{})", s.h_qk, s.h_v);
  if (s.h_v % s.h_qk != 0) return fmt::format("h_v % h_qk must be 0 (got {}/{})", s.h_qk, s.h_v);
  if (s.dk < 1 || s.dv < 1 || s.dk > 1024 || s.dv > 1024)
    return fmt::format("head dims must be in 1..1024 (got {}x{})", s.dk, s.dv);
  if (s.input_dtype != DType::bf16 && s.input_dtype != DType::f16)
    return fmt::format("input dtype must be bf16 or f16 (got {})", to_string(s.input_dtype));
  if (s.scale < 0) return "scale must be > 0 (or 0 for the default K^-1/2)";
  return "";
}


double state_elems_per_slot(const Shape& s) { return double(s.h_v) * s.dk * s.dv; }

}  // namespace gdn

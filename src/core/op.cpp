#include "core/op.h"

#include <stdexcept>

namespace gdn {

// Defined in kernels/<op>/op.cpp.
extern const OpDef kPrefillOp;
extern const OpDef kDecodeOp;
extern const OpDef kMtpOp;

const std::vector<const OpDef*>& all_ops() {
  static const std::vector<const OpDef*> ops{&kPrefillOp, &kDecodeOp, &kMtpOp};
  return ops;
}

const OpDef& op_def(OpKind k) {
  for (auto* op : all_ops())
    if (op->kind == k) return *op;
  throw std::logic_error("no OpDef for op");
}

double state_elems_per_slot(const Shape& s) { return double(s.h_v) * s.dk * s.dv; }

}  // namespace gdn

#include "mtp/op.h"

#include "core/op.h"

namespace gdn {

namespace {

// decode's pool layout; T comes from the config (`tokens` is required).
Shape default_shape() {
  Shape s;
  s.op = OpKind::mtp;
  s.layout = Layout::vk;
  return s;
}

}  // namespace

// mtp is decode with a time axis: one contract, read through Shape::tokens and the mtp options.
const OpDef kMtpOp{OpKind::mtp, "mtp", "T draft tokens per row (speculative verify), optional intermediate states",
                   step_tensors, step_work, step_tolerances, step_validate, default_shape};

}  // namespace gdn

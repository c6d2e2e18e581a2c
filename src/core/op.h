// The contract of an op: its tensors for a shape, its work model (docs/method.md 5), its
// tolerances (docs/method.md 4) and its shape validation. One OpDef per op, defined in
// kernels/<op>/op.cpp; the reference for the op lives in reference/.
#pragma once

#include <string>
#include <vector>

#include "core/shape.h"
#include "core/tensor.h"

namespace gdn {

// Relative-L2 pass thresholds per output tensor name.
struct Tolerance {
  std::string tensor;
  double rel_l2 = 0.0;
};

struct WorkModel {
  double bytes = 0;       // minimal traffic, docs/method.md 5
  double flops = 0;       // gdnbench convention (FlashQLA count for prefill, 6BTHVKV for decode/mtp)
  double flops_fi = 0;    // FlashInfer convention (4 T HV K V for prefill; same as flops otherwise)
  bool bandwidth_bound = true;  // roofline against copy bandwidth (true) or bf16 MMA rate (false)
};

struct OpDef {
  OpKind kind;
  std::string name;
  std::string summary;
  // Every tensor of the problem, inputs first, in a stable order.
  std::vector<TensorSpec> (*tensors)(const Shape&);
  WorkModel (*work)(const Shape&);
  // Default thresholds for this shape (docs/method.md 4); variants may tighten them.
  std::vector<Tolerance> (*tolerances)(const Shape&);
  // "" when the shape is a legal problem of this op, else the reason.
  std::string (*validate)(const Shape&);
  // The shape a config point of this op starts from: Shape's defaults with the op's own (for
  // example the state layout: kv for prefill, vk for decode and mtp).
  Shape (*default_shape)();
};

const OpDef& op_def(OpKind);
const std::vector<const OpDef*>& all_ops();

// The three definitions (kernels/<op>/op.cpp). Declared here so those namespace-scope consts get
// external linkage (a const without a prior extern declaration is local to its file).
extern const OpDef kPrefillOp;
extern const OpDef kDecodeOp;
extern const OpDef kMtpOp;

// Shared model pieces (docs/method.md 5), used by the three op definitions.
double state_elems_per_slot(const Shape& s);  // HV * K * V
// The shape rules every op shares (heads, head dims, dtypes, scale): "" or the reason.
std::string validate_common(const Shape& s);

}  // namespace gdn

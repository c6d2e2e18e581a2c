// prefill/cpu_late_checkpoint: a TEST-ONLY variant with a realistic checkpoint bug — an
// off-by-one in the checkpoint column, so each checkpoint slot receives the state of the
// sequence's next checkpoint. o and the final states are right. Verification must reject it; the
// tests use it to prove that the checkpoint check fails (exit code 2). Compiled only into the
// test executables and gdnbench-testing, never into gdnbench; never matched by a wildcard.
#include <cstring>

#include "core/registry.h"
#include "core/slot.h"
#include "prefill/op.h"

namespace gdn {
namespace {

void launch(const Shape& s, const TensorSet& t, const LaunchContext& ctx) {
  Registry::instance().find("prefill/cpu")->launch(s, t, ctx);
  const auto a = prefill::make_args(s, t, t.ptr<const int32_t>("cu_seqlens"));
  if (!a.checkpoint_indices) return;
  const std::size_t slot_bytes = std::size_t(a.HV) * a.K * a.V * dtype_size(a.state_dtype);
  auto* pool = static_cast<char*>(a.pool);
  for (int64_t n = 0; n < a.N; ++n)
    for (int64_t j = 0; j + 1 < a.J; ++j) {
      const int64_t here = slot_at(a.checkpoint_indices, a.index_dtype, n * a.J + j);
      const int64_t next = slot_at(a.checkpoint_indices, a.index_dtype, n * a.J + j + 1);
      if (here >= 0 && next >= 0) std::memcpy(pool + here * slot_bytes, pool + next * slot_bytes, slot_bytes);  // BUG
    }
}

const VariantRegistration reg{Variant{
    "prefill/cpu_late_checkpoint", OpKind::prefill, Backend::cpu, 0, 1000,
    "TEST ONLY: writes each checkpoint slot with the state of the next checkpoint (verification must fail)",
    {}, launch, {}, true}};

}  // namespace
}  // namespace gdn

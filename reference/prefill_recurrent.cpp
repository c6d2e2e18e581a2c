// The token recurrence over a packed batch: the oracle every other form is checked against.
#include <cstdint>

#include "reference/detail.h"
#include "reference/reference.h"

namespace gdn::ref {

using detail::Mat;

PrefillResult prefill_recurrent(const Shape& s, const TensorSet& in, const Selection& sel, int threads) {
  const detail::PrefillPlan plan(s, in, sel);
  const detail::Dims& d = plan.d;
  return plan.run(threads, [&](int64_t n, int h, Mat& S, PrefillResult& r) {
    detail::TokenScratch w(d);
    const auto& at = plan.checkpoints[size_t(n)];
    size_t j = 0;
    for (int64_t row = plan.cu[size_t(n)]; row < plan.cu[size_t(n) + 1]; ++row) {
      detail::recurrent_row(S, s, in, d, row, h, w, r.o.data() + (row * d.HV + h) * d.V);
      if (j < at.size() && row + 1 - plan.cu[size_t(n)] == at[j]) plan.save_checkpoint(n, h, int64_t(j++), S, r);
    }
  });
}

}  // namespace gdn::ref

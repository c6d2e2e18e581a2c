// The token recurrence over a packed batch: the oracle every other form is checked against.
#include <algorithm>
#include <limits>

#include "reference/detail.h"
#include "reference/reference.h"

namespace gdn::ref {

using detail::Mat;
using detail::Vec;

PrefillResult prefill_recurrent(const Shape& s, const TensorSet& in, const Selection& sel, int threads) {
  const detail::Dims d(s);
  const auto cu = detail::sequence_starts(s, in);
  const int64_t N = int64_t(s.seqlens.size()), T = cu.back(), KV = d.state_size();
  const auto heads = detail::resolve_heads(sel.heads, d.HV);
  const auto seqs = detail::resolve_items(sel.seqs, N, "sequence");

  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  PrefillResult r;
  r.o.assign(size_t(T * d.HV * d.V), nan);
  r.ht.assign(size_t(N * d.HV * KV), nan);

  const Tensor &q = in.at("q"), &k = in.at("k"), &v = in.at("v");
  const Tensor* h0 = in.has("h0") ? &in.at("h0") : nullptr;

  const int64_t tasks = int64_t(seqs.size()) * int64_t(heads.size());
  detail::parallel_for(tasks, threads, [&](int64_t task) {
    const int64_t n = seqs[size_t(task / int64_t(heads.size()))];
    const int h = heads[size_t(task % int64_t(heads.size()))], hk = h / d.group;
    const int64_t state_at = (n * d.HV + h) * KV;
    Mat S = h0 ? detail::load_state(*h0, state_at, s.layout, d.K, d.V) : Mat::Zero(d.K, d.V);
    Vec qt(d.K), kt(d.K), vt(d.V), o(d.V), p(d.V), delta(d.V);
    for (int64_t row = cu[size_t(n)]; row < cu[size_t(n) + 1]; ++row) {
      detail::load_qk(q, d, row, hk, qt.data());
      detail::load_qk(k, d, row, hk, kt.data());
      detail::load_into(v, (row * d.HV + h) * d.V, d.V, vt.data());
      const GateValue gate = gate_at(s, in, row, h);
      detail::recurrent_token(S, qt, kt, vt, gate.g, gate.beta, d.scale, o, p, delta);
      std::copy(o.data(), o.data() + d.V, r.o.data() + (row * d.HV + h) * d.V);
    }
    detail::store_state(S, s.layout, r.ht.data() + state_at);
  });
  return r;
}

}  // namespace gdn::ref

#include "run/verify.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/checkpoints.h"
#include "core/slot.h"
#include "core/errors.h"
#include "core/state_quant.h"
#include "run/inputs.h"
#include "run/runner.h"

namespace gdn {
namespace {

// Running totals for one output tensor.
struct Acc {
  double diff2 = 0, ref2 = 0, max_abs = 0;
  int64_t checked = 0, nonfinite = 0, unwritten = 0, exact_diff = 0;

  void add(double x, double r) {
    if (!std::isfinite(x)) {
      ++nonfinite;
      return;
    }
    double d = x - r;
    diff2 += d * d;
    ref2 += r * r;
    max_abs = std::max(max_abs, std::fabs(d));
    ++checked;
  }
  // Elements that must be exactly zero (padding rows).
  void add_zero(double x) {
    if (x != 0.0) ++exact_diff;
    ++checked;
  }
  TensorCheck finish(const std::string& name, double tol) const {
    TensorCheck c;
    c.tensor = name;
    c.tolerance = tol;
    c.checked = checked;
    c.nonfinite = nonfinite;
    c.unwritten = unwritten;
    c.untouched_diff = exact_diff;
    c.max_abs = checked ? max_abs : kNaN;
    // A zero reference (all-padding output) is compared by its absolute error instead.
    c.rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
    c.pass = checked > 0 && nonfinite == 0 && unwritten == 0 && exact_diff == 0 && c.rel_l2 <= tol;
    return c;
  }
};

// Counts poisoned and non-finite elements over a whole output tensor (selection or not: an
// element no one wrote is a bug wherever it is).
void count_unwritten(const Tensor& t, Acc& acc) {
  for (int64_t i = 0; i < t.numel(); ++i)
    if (is_poison(t.spec, t.data, i)) ++acc.unwritten;
}

double tol_for(const std::vector<Tolerance>& tols, const std::string& name) {
  for (auto& t : tols)
    if (t.tensor == name) return t.rel_l2;
  return 0.0;  // no threshold means the tensor must match exactly
}

std::vector<int> heads_of(const Shape& s, const ref::Selection& sel) {
  if (!sel.heads.empty()) return sel.heads;
  std::vector<int> all(static_cast<size_t>(s.h_v));
  for (int h = 0; h < s.h_v; ++h) all[size_t(h)] = h;
  return all;
}

std::vector<int64_t> seqs_of(int64_t n, const ref::Selection& sel) {
  if (!sel.seqs.empty()) return sel.seqs;
  std::vector<int64_t> all(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) all[size_t(i)] = i;
  return all;
}

// The fp32 scales of one 8-bit pool slot that differ from the initial pool's.
int64_t count_changed_scales(const Tensor& now, const Tensor& was, int64_t slot, std::size_t slot_bytes) {
  const auto* a = static_cast<const uint8_t*>(now.data) + std::size_t(slot) * slot_bytes;
  const auto* b = static_cast<const uint8_t*>(was.data) + std::size_t(slot) * slot_bytes;
  int64_t changed = 0;
  for (std::size_t e = 0; e < slot_bytes; e += sizeof(float)) changed += std::memcmp(a + e, b + e, sizeof(float)) != 0;
  return changed;
}

// pool: slots named by a row (a decode row, a prefill sequence) hold the reference final state
// of that row (when written); every other slot, and every slot when the pool is read only, must be
// bit-identical to the initial pool.
TensorCheck check_pool(const Problem& p, const std::vector<Tolerance>& tols, int64_t row_count, const std::vector<int>& heads,
                       const std::vector<int64_t>& rows, bool selected_all_rows, bool writes_pool,
                       const std::vector<double>& ref_state, const std::unordered_set<int64_t>& checked_elsewhere = {}) {
  const Shape& s = p.shape();
  const int64_t HV = s.h_v, S = int64_t(s.dk) * s.dv;
  const auto& idx_t = p.inputs().at("indices");
  auto slot_of = [&](int64_t row) { return slot_at(idx_t.data, idx_t.spec.dtype, row); };
  const auto& pool = p.results().at("pool");
  const auto& pool0 = p.inputs().at("pool");
  const std::size_t slot_bytes = std::size_t(S) * HV * dtype_size(pool.spec.dtype);
  // An 8-bit pool's values are its codes times its rows' scales (HV x V fp32 per slot).
  const Tensor* scales = p.results().has("pool_scale") ? &p.results().at("pool_scale") : nullptr;
  const Tensor* scales0 = scales ? &p.inputs().at("pool_scale") : nullptr;
  const std::size_t scale_bytes = scales ? std::size_t(HV) * s.dv * sizeof(float) : 0;
  std::unordered_map<int64_t, int64_t> row_of_slot;
  for (int64_t b = 0; b < row_count; ++b)
    if (slot_of(b) >= 0) row_of_slot[slot_of(b)] = b;
  Acc ap;
  const int64_t P = s.pool_slots();
  for (int64_t slot = 0; slot < P; ++slot) {
    if (checked_elsewhere.count(slot)) continue;
    auto it = row_of_slot.find(slot);
    const auto* now = static_cast<const uint8_t*>(pool.data) + std::size_t(slot) * slot_bytes;
    const auto* was = static_cast<const uint8_t*>(pool0.data) + std::size_t(slot) * slot_bytes;
    if (it == row_of_slot.end() || !writes_pool) {
      if (std::memcmp(now, was, slot_bytes) != 0) {
        std::size_t es = dtype_size(pool.spec.dtype);
        for (std::size_t e = 0; e < slot_bytes / es; ++e)
          if (std::memcmp(now + e * es, was + e * es, es) != 0) ++ap.exact_diff;
      }
      ap.checked += HV * S;
      if (scales) ap.exact_diff += count_changed_scales(*scales, *scales0, slot, scale_bytes);
      continue;
    }
    int64_t b = it->second;
    if (!selected_all_rows && std::find(rows.begin(), rows.end(), b) == rows.end()) continue;
    for (int h : heads)
      for (int64_t e = 0; e < S; ++e) {
        int64_t i = (slot * HV + h) * S + e;
        ap.add(ref::load_state_value(pool, scales, i), ref_state[size_t((b * HV + h) * S + e)]);
      }
  }
  return ap.finish("pool", writes_pool ? tol_for(tols, "pool") : 0.0);
}

// Checkpoint slots (docs/method.md 2.4): each slot the table names holds the reference state
// after its position. `slots` receives every named slot (check_pool leaves them to this check).
std::optional<TensorCheck> check_checkpoints(const Problem& p, const std::vector<Tolerance>& tols,
                                             const std::vector<int>& heads, const std::vector<int64_t>& seqs,
                                             const std::vector<double>& ref_states, std::unordered_set<int64_t>& slots) {
  const Shape& s = p.shape();
  if (!p.inputs().has("checkpoint_indices")) return std::nullopt;
  const auto& table = p.inputs().at("checkpoint_indices");
  const auto& pool = p.results().at("pool");
  const Tensor* scales = p.results().has("pool_scale") ? &p.results().at("pool_scale") : nullptr;  // 8-bit pools
  const int64_t HV = s.h_v, S = int64_t(s.dk) * s.dv, J = checkpoint_columns(s);
  auto slot_of = [&](int64_t n, int64_t j) { return slot_at(table.data, table.spec.dtype, n * J + j); };
  for (int64_t n = 0; n < int64_t(s.seqlens.size()); ++n)
    for (int64_t j = 0; j < J; ++j)
      if (slot_of(n, j) >= 0) slots.insert(slot_of(n, j));
  if (slots.empty()) return std::nullopt;  // every entry -1: nothing is written
  Acc ac;
  for (int64_t n : seqs)
    for (int64_t j = 0; j < int64_t(checkpoint_positions(s, n).size()); ++j) {
      if (slot_of(n, j) < 0) continue;
      for (int h : heads)
        for (int64_t e = 0; e < S; ++e)
          ac.add(ref::load_state_value(pool, scales, (slot_of(n, j) * HV + h) * S + e),
                 ref_states[size_t(((n * J + j) * HV + h) * S + e)]);
    }
  return ac.finish("checkpoints", tol_for(tols, "checkpoints"));
}

std::vector<TensorCheck> check_prefill(const Problem& p, const std::vector<Tolerance>& tols, const ref::Selection& sel,
                                       int threads) {
  const Shape& s = p.shape();
  auto ref = s.total_tokens() * double(s.h_v) * s.dk * s.dv <= 2e8 ? ref::prefill_recurrent(s, p.inputs(), sel, threads)
                                                                   : ref::prefill_chunked(s, p.inputs(), 64, sel, threads);
  const int64_t HV = s.h_v, V = s.dv, S = int64_t(s.dk) * s.dv;
  std::vector<int64_t> cu{0};
  for (auto l : s.seqlens) cu.push_back(cu.back() + l);
  const auto heads = heads_of(s, sel);
  const auto seqs = seqs_of(int64_t(s.seqlens.size()), sel);
  // The final states: in the pool form in the pool's named slots, else in ht.
  const bool pooled = s.prefill_pool();
  const auto& o = p.results().at("o");
  const Tensor* ht = pooled ? nullptr : &p.results().at("ht");
  Acc ao, ah;
  count_unwritten(o, ao);
  if (ht) count_unwritten(*ht, ah);
  for (int64_t n : seqs) {
    for (int h : heads) {
      for (int64_t t = cu[size_t(n)]; t < cu[size_t(n) + 1]; ++t)
        for (int64_t j = 0; j < V; ++j) {
          int64_t i = (t * HV + h) * V + j;
          if (!is_poison(o.spec, o.data, i)) ao.add(ref::load(o, i), ref.o[size_t(i)]);
        }
      for (int64_t e = 0; ht && e < S; ++e) {
        int64_t i = (n * HV + h) * S + e;
        if (!is_poison(ht->spec, ht->data, i)) ah.add(ref::load(*ht, i), ref.ht[size_t(i)]);
      }
    }
  }
  if (pooled) {
    std::unordered_set<int64_t> checkpoint_slots;
    const auto checkpoints = check_checkpoints(p, tols, heads, seqs, ref.checkpoints, checkpoint_slots);
    std::vector<TensorCheck> out{
        ao.finish("o", tol_for(tols, "o")),
        check_pool(p, tols, int64_t(s.seqlens.size()), heads, seqs, sel.seqs.empty(), true, ref.ht, checkpoint_slots)};
    if (checkpoints) out.push_back(*checkpoints);
    return out;
  }
  return {ao.finish("o", tol_for(tols, "o")), ah.finish("ht", tol_for(tols, "ht"))};
}

std::vector<TensorCheck> check_step(const Problem& p, const std::vector<Tolerance>& tols, const ref::Selection& sel,
                                    int threads) {
  const Shape& s = p.shape();
  auto ref = ref::step(s, p.inputs(), sel, threads);
  const bool mtp = s.op == OpKind::mtp;
  const bool writes_pool = !mtp || s.update_state;
  const int64_t B = s.batch, T = mtp ? s.tokens : 1, HV = s.h_v, V = s.dv, S = int64_t(s.dk) * s.dv;
  const auto& idx_t = p.inputs().at("indices");
  auto slot_of = [&](int64_t row) { return slot_at(idx_t.data, idx_t.spec.dtype, row); };
  auto heads = heads_of(s, sel);
  auto rows = seqs_of(B, sel);
  std::vector<TensorCheck> out;

  // o: padding rows must be exactly zero.
  const auto& o = p.results().at("o");
  Acc ao;
  count_unwritten(o, ao);
  for (int64_t b : rows)
    for (int64_t t = 0; t < T; ++t)
      for (int h : heads)
        for (int64_t j = 0; j < V; ++j) {
          int64_t i = ((b * T + t) * HV + h) * V + j;
          if (is_poison(o.spec, o.data, i)) continue;
          if (slot_of(b) < 0) ao.add_zero(ref::load(o, i));
          else ao.add(ref::load(o, i), ref.o[size_t(i)]);
        }
  out.push_back(ao.finish("o", tol_for(tols, "o")));

  out.push_back(check_pool(p, tols, B, heads, rows, sel.seqs.empty(), writes_pool, ref.state));

  if (mtp && s.cache_intermediate) {
    const auto& im = p.results().at("intermediate");
    const Tensor* im_scales = p.results().has("intermediate_scale") ? &p.results().at("intermediate_scale") : nullptr;
    Acc ai;
    count_unwritten(im, ai);
    if (im_scales) count_unwritten(*im_scales, ai);
    for (int64_t b : rows)
      for (int64_t t = 0; t < T; ++t)
        for (int h : heads)
          for (int64_t e = 0; e < S; ++e) {
            int64_t i = ((b * T + t) * HV + h) * S + e;
            if (is_poison(im.spec, im.data, i) || (im_scales && is_poison(im_scales->spec, im_scales->data, i / s.dk)))
              continue;
            if (slot_of(b) < 0) ai.add_zero(ref::load_state_value(im, im_scales, i));
            else ai.add(ref::load_state_value(im, im_scales, i), ref.intermediate[size_t(i)]);
          }
    out.push_back(ai.finish("intermediate", tol_for(tols, "intermediate")));
  }
  return out;
}

// fp8 pools: every row a variant wrote (the named slots, the checkpoints, the mtp cache) follows the
// writers' rule of its scale (quant::fp8_row_follows_rule), over every head: values within
// tolerance do not show a scale of absmax / 448, which drifts differently (docs/state-8bit.md).
std::optional<TensorCheck> check_fp8_scale_rule(const Problem& p) {
  const Shape& s = p.shape();
  if (s.state_dtype != DType::fp8e4m3 || !p.results().has("pool_scale")) return std::nullopt;
  const int64_t rows_per_slot = int64_t(s.h_v) * s.dv, K = s.dk;
  const auto& idx = p.inputs().at("indices");
  std::set<int64_t> slots;
  const bool writes_pool = s.op != OpKind::mtp || s.update_state;
  const int64_t entries = s.op == OpKind::prefill ? int64_t(s.seqlens.size()) : s.batch;
  for (int64_t b = 0; writes_pool && b < entries; ++b)
    if (const int64_t slot = slot_at(idx.data, idx.spec.dtype, b); slot >= 0) slots.insert(slot);
  if (p.inputs().has("checkpoint_indices")) {
    const auto& table = p.inputs().at("checkpoint_indices");
    const int64_t J = checkpoint_columns(s);
    for (int64_t n = 0; n < int64_t(s.seqlens.size()); ++n)
      for (int64_t j = 0; j < int64_t(checkpoint_positions(s, n).size()); ++j)
        if (const int64_t slot = slot_at(table.data, table.spec.dtype, n * J + j); slot >= 0) slots.insert(slot);
  }
  TensorCheck c;
  c.tensor = "pool_scale";
  c.tolerance = 0;
  int64_t off = 0;
  auto check_rows = [&](const Tensor& codes, const Tensor& scales, int64_t row0, int64_t rows) {
    for (int64_t r = row0; r < row0 + rows; ++r, ++c.checked)
      if (!quant::fp8_row_follows_rule(static_cast<const uint8_t*>(codes.data) + r * K, K, static_cast<const float*>(scales.data)[r])) ++off;
  };
  for (int64_t slot : slots) check_rows(p.results().at("pool"), p.results().at("pool_scale"), slot * rows_per_slot, rows_per_slot);
  if (p.results().has("intermediate_scale")) {
    const auto& im_scales = p.results().at("intermediate_scale");
    check_rows(p.results().at("intermediate"), im_scales, 0, im_scales.numel());
  }
  if (c.checked == 0) return std::nullopt;
  c.rel_l2 = double(off) / double(c.checked);  // the share of written rows off the rule
  c.max_abs = double(off);
  c.pass = off == 0;
  return c;
}

}  // namespace

ref::Selection choose_selection(const Shape& s, std::optional<int> verify_heads, double budget, std::string& scope) {
  ref::Selection sel;
  // Reference cost in state updates: tokens x value heads x K x V.
  const double per_head = double(s.total_tokens()) * s.dk * s.dv;
  int want = s.h_v;
  if (verify_heads && *verify_heads > 0) want = std::min(*verify_heads, s.h_v);
  else if (per_head * s.h_v > budget) want = std::clamp(int(budget / per_head), 1, s.h_v);
  if (want >= s.h_v) {
    scope = "full";
    return sel;
  }
  // Evenly spread heads, first and last included: both ends of each GVA group get checked.
  for (int i = 0; i < want; ++i) {
    int h = want == 1 ? 0 : int((int64_t(i) * (s.h_v - 1)) / (want - 1));
    if (sel.heads.empty() || sel.heads.back() != h) sel.heads.push_back(h);
  }
  scope = fmt::format("value heads {} of {} (all {})", fmt::join(sel.heads, ","), s.h_v,
                      s.op == OpKind::prefill ? fmt::format("{} sequences", s.seqlens.size())
                                              : fmt::format("{} rows", s.batch));
  return sel;
}

std::vector<Tolerance> effective_tolerances(const Shape& s, const std::vector<Tolerance>& variant_tols) {
  auto tols = op_def(s.op).tolerances(s);
  for (auto& t : tols)
    for (auto& v : variant_tols)
      if (v.tensor == t.tensor) t.rel_l2 = std::min(t.rel_l2, v.rel_l2);
  return tols;
}

Verification check_outputs(const Problem& p, const std::vector<Tolerance>& tols, const ref::Selection& sel,
                           int threads) {
  Verification v;
  v.ran = true;
  v.checks = p.shape().op == OpKind::prefill ? check_prefill(p, tols, sel, threads) : check_step(p, tols, sel, threads);
  if (auto rule = check_fp8_scale_rule(p)) v.checks.push_back(*rule);
  v.pass = !v.checks.empty();
  for (auto& c : v.checks) v.pass = v.pass && c.pass;
  return v;
}

Verification verify_problem(const Variant& var, Problem& p, ExecBackend& backend, std::optional<int> verify_heads,
                            double verify_budget, int threads) {
  auto t0 = std::chrono::steady_clock::now();
  p.reset_device();
  var.launch(p.shape(), p.device(), backend.launch_context());
  p.download();
  std::string scope;
  auto sel = choose_selection(p.shape(), verify_heads, verify_budget, scope);
  auto v = check_outputs(p, effective_tolerances(p.shape(), var.tolerances), sel, threads);
  v.scope = scope;
  v.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return v;
}

Verification verify_variant(const Variant& var, const Shape& s, ExecBackend& backend, uint64_t seed,
                            std::optional<int> verify_heads, double verify_budget) {
  Problem p(s, backend, seed);
  return verify_problem(var, p, backend, verify_heads, verify_budget, 0);
}

}  // namespace gdn

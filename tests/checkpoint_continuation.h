// The reverse of a prefill checkpoint (docs/method.md 2.4): one prompt run with a checkpoint at
// position p, then its tokens from p on run again from the checkpoint's slot (the pool form),
// must give the unsplit prompt's outputs from p on and its final state. Shared by the CPU tests
// (prefill/cpu) and the GPU tests (any variant that writes checkpoints).
#pragma once

#include <cmath>
#include <cstring>
#include <set>
#include <string>

#include "core/registry.h"
#include "core/slot.h"
#include "reference/reference.h"
#include "run/backend.h"
#include "run/problem.h"

namespace gdn::test {

struct Continuation {
  double o_rel = NAN;      // relative L2 of the continued o against the unsplit prompt's rows from p
  double state_rel = NAN;  // relative L2 of the continued final state against the unsplit one
  bool o_identical = false, state_identical = false;
};

// `prompt` is a one-sequence pool-form shape of L tokens (pool >= 2, no checkpoints set); p a
// multiple of 64 in [64, L).
inline Continuation continue_from_checkpoint(const Variant& v, ExecBackend& backend, Shape prompt, int64_t p,
                                             uint64_t seed) {
  const int64_t L = prompt.seqlens.at(0);
  prompt.checkpoint_every = 0;
  prompt.checkpoint_at = {{p}};
  Problem whole(prompt, backend, seed);
  whole.reset_device();
  v.launch(prompt, whole.device(), backend.launch_context());
  whole.download();
  auto slot_of = [](const TensorSet& t, const char* name) {
    return slot_at(t.at(name).data, t.at(name).spec.dtype, 0);
  };
  const int64_t final_slot = slot_of(whole.inputs(), "indices");
  const int64_t checkpoint_slot = slot_of(whole.inputs(), "checkpoint_indices");

  // The tail: tokens [p, L) of the same inputs, starting from the pool the first run left, with
  // the sequence's index set to the checkpoint's slot.
  Shape tail = prompt;
  tail.seqlens = {L - p};
  tail.checkpoint_at.clear();
  Problem rest(tail, backend, seed);
  static const std::set<std::string> per_token{"q", "k", "v", "g", "beta", "a", "b"};
  for (const auto& [name, t] : rest.inputs().all()) {
    // The pool (and an 8-bit pool's row scales) as the first run left them.
    const bool pooled = name == "pool" || name == "pool_scale";
    const Tensor& from = pooled ? whole.results().at(name) : whole.inputs().at(name);
    if (name == "cu_seqlens" || t.spec.role == Role::output) continue;
    if (name == "indices") {
      if (t.spec.dtype == DType::i32) static_cast<int32_t*>(t.data)[0] = int32_t(checkpoint_slot);
      else static_cast<int64_t*>(t.data)[0] = checkpoint_slot;
      continue;
    }
    const std::size_t row = per_token.count(name) ? from.bytes() / std::size_t(L) : 0;
    std::memcpy(t.data, static_cast<const char*>(from.data) + row * std::size_t(p), t.bytes());
  }
  rest.reset_device();
  v.launch(tail, rest.device(), backend.launch_context());
  rest.download();

  Continuation c;
  const Tensor &o_whole = whole.results().at("o"), &o_rest = rest.results().at("o");
  const int64_t row = o_whole.numel() / L;
  double d2 = 0, r2 = 0;
  c.o_identical = true;
  for (int64_t i = 0; i < o_rest.numel(); ++i) {
    const double x = ref::load(o_rest, i), r = ref::load(o_whole, p * row + i);
    d2 += (x - r) * (x - r), r2 += r * r;
    c.o_identical = c.o_identical && x == r;
  }
  c.o_rel = std::sqrt(d2 / r2);
  const Tensor &pool_whole = whole.results().at("pool"), &pool_rest = rest.results().at("pool");
  // An 8-bit pool's values are code x scale (docs/method.md 2.5).
  const Tensor* scales_whole = whole.results().has("pool_scale") ? &whole.results().at("pool_scale") : nullptr;
  const Tensor* scales_rest = rest.results().has("pool_scale") ? &rest.results().at("pool_scale") : nullptr;
  const int64_t slot = pool_whole.numel() / prompt.pool_slots();
  d2 = r2 = 0;
  c.state_identical = true;
  for (int64_t e = 0; e < slot; ++e) {
    const double x = ref::load_state_value(pool_rest, scales_rest, checkpoint_slot * slot + e);
    const double r = ref::load_state_value(pool_whole, scales_whole, final_slot * slot + e);
    d2 += (x - r) * (x - r), r2 += r * r;
    c.state_identical = c.state_identical && x == r;
  }
  c.state_rel = std::sqrt(d2 / r2);
  return c;
}

}  // namespace gdn::test

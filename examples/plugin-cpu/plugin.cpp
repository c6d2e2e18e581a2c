// A gdnbench kernel plugin (docs/plugins.md): prefill, decode and mtp as plain C++ loops on the
// host, one (sequence or row, value head) at a time. It is the worked example of the ABI, not a
// fast kernel: gdnbench verifies it against the fp64 reference and times it with the host clock
// beside the built-in CPU variants.
//
//   g++ -std=c++17 -O2 -shared -fPIC -I <gdnbench>/include plugin.cpp -o libexample_cpu.so
//   gdnbench run --plugin ./libexample_cpu.so --config tests/data/tiny.yaml
#include <cstdio>

#include "gdnbench/kernel.h"
#include "recurrence.h"

namespace {

using example::State;

// bf16 inputs only: f16 is a legal problem this example does not implement, so it says so and
// gdnbench records the point as skipped with this reason.
int supports(const gdn_shape* s, char* reason, size_t reason_len) {
  if (s->input_dtype != GDN_DTYPE_BF16) {
    std::snprintf(reason, reason_len, "bf16 inputs only (this point has f16)");
    return 0;
  }
  return 1;
}

// decode and mtp: row b runs its T tokens from its slot (or, with rollback, from the cached
// state of its last accepted token) and writes the state back unless update_state is off.
int step_rows(const gdn_args* a, void* stream, char* error, size_t error_len) {
  (void)stream, (void)error, (void)error_len;
  const gdn_shape& s = *a->shape;
  const int64_t per_head = example::head_state(s), T = s.tokens;
  auto head_of = [&](void* base, int64_t index, int h) {  // [.., HV, S] entry `index`, head h
    return static_cast<char*>(base) + (index * s.h_v + h) * per_head * (s.state_dtype == GDN_DTYPE_BF16 ? 2 : 4);
  };
  for (int64_t b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.h_v; ++h) {
      const int64_t slot = example::slot_at(*a, b);
      State st(s.dk, s.dv);
      std::vector<float> o(std::size_t(s.dv), 0.f);
      if (slot < 0) {  // a padding row: zeros out (and in the cache), no slot touched
        for (int64_t t = 0; t < T; ++t) {
          example::store_o(*a, b * T + t, h, o.data());
          if (s.cache_intermediate) st.store(head_of(a->intermediate, b * T + t, h), s.state_dtype, s.layout);
        }
        continue;
      }
      const int accepted = s.rollback ? a->accepted[b] : 0;
      if (accepted > 0) st.load(head_of(a->intermediate, b * T + accepted - 1, h), s.state_dtype, s.layout);
      else st.load(head_of(a->pool, slot, h), s.state_dtype, s.layout);
      const int hk = h / (s.h_v / s.h_qk);
      for (int64_t t = 0; t < T; ++t) {
        const int64_t row = b * T + t;
        const auto q = example::load_qk(*a, a->q, row, hk), k = example::load_qk(*a, a->k, row, hk);
        const auto v = example::load_v(*a, row, h);
        st.step(q.data(), k.data(), v.data(), example::gate_at(*a, row, h), s.scale, o.data());
        example::store_o(*a, row, h, o.data());
        if (s.cache_intermediate) st.store(head_of(a->intermediate, row, h), s.state_dtype, s.layout);
      }
      if (s.update_state) st.store(head_of(a->pool, slot, h), s.state_dtype, s.layout);
    }
  return 0;
}

// prefill: each packed sequence from h0 (or zero) to ht, or from its pool slot back to it.
int prefill(const gdn_args* a, void* stream, char* error, size_t error_len) {
  (void)stream, (void)error, (void)error_len;
  const gdn_shape& s = *a->shape;
  const int64_t per_head = example::head_state(s);
  const int pool_bytes = s.state_dtype == GDN_DTYPE_BF16 ? 2 : 4;
  for (int64_t n = 0; n < s.num_seqs; ++n)
    for (int h = 0; h < s.h_v; ++h) {
      State st(s.dk, s.dv);
      char* slot = nullptr;  // the pool form's slot of this sequence and head; null: start from zero
      if (s.pool_slots > 0) {
        const int64_t index = example::slot_at(*a, n);
        if (index >= 0) slot = static_cast<char*>(a->pool) + (index * s.h_v + h) * per_head * pool_bytes;
        if (slot) st.load(slot, s.state_dtype, s.layout);
      } else if (a->h0) {
        st.load(a->h0 + (n * s.h_v + h) * per_head, GDN_DTYPE_F32, s.layout);
      }
      const int hk = h / (s.h_v / s.h_qk);
      std::vector<float> o(std::size_t(s.dv));
      for (int64_t t = a->cu_seqlens_host[n]; t < a->cu_seqlens_host[n + 1]; ++t) {
        const auto q = example::load_qk(*a, a->q, t, hk), k = example::load_qk(*a, a->k, t, hk);
        const auto v = example::load_v(*a, t, h);
        st.step(q.data(), k.data(), v.data(), example::gate_at(*a, t, h), s.scale, o.data());
        example::store_o(*a, t, h, o.data());
      }
      if (s.pool_slots > 0) {
        if (slot) st.store(slot, s.state_dtype, s.layout);
      } else {
        st.store(a->ht + (n * s.h_v + h) * per_head, GDN_DTYPE_F32, s.layout);
      }
    }
  return 0;
}

const gdn_tolerance kFp32State[] = {{"ht", 1e-4}};  // fp32 all the way: tighter than the op's default

const gdn_variant kVariants[] = {
    {"prefill_loop", GDN_OP_PREFILL, GDN_BACKEND_CPU, 0, 0, "example plugin: the token recurrence in plain loops",
     supports, prefill, kFp32State, 1},
    {"decode_loop", GDN_OP_DECODE, GDN_BACKEND_CPU, 0, 0, "example plugin: one token per row in plain loops", supports,
     step_rows, nullptr, 0},
    {"mtp_loop", GDN_OP_MTP, GDN_BACKEND_CPU, 0, 0, "example plugin: T tokens per row in plain loops", supports,
     step_rows, nullptr, 0},
};

const gdn_kernel_table kTable = {GDNBENCH_KERNEL_ABI_VERSION, sizeof kVariants / sizeof kVariants[0], kVariants};

}  // namespace

extern "C" GDNBENCH_EXPORT const gdn_kernel_table* gdnbench_kernels(void) { return &kTable; }

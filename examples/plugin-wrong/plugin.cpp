// A deliberately wrong gdnbench kernel plugin (docs/plugins.md): decode in plain loops that
// forgets the gate on one step, row 0 carrying its state over undecayed. Everything else is
// right, so only the fp64 reference can tell: `gdnbench verify --plugin` on it exits 2.
#include "gdnbench/kernel.h"
#include "../plugin-cpu/recurrence.h"

namespace {

using example::State;

int decode(const gdn_args* a, void* stream, char* error, size_t error_len) {
  (void)stream, (void)error, (void)error_len;
  const gdn_shape& s = *a->shape;
  const int64_t per_head = example::head_state(s);
  const int bytes = s.state_dtype == GDN_DTYPE_BF16 ? 2 : 4;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.h_v; ++h) {
      std::vector<float> o(std::size_t(s.dv), 0.f);
      const int64_t slot = example::slot_at(*a, b);
      if (slot < 0) {
        example::store_o(*a, b, h, o.data());
        continue;
      }
      char* state = static_cast<char*>(a->pool) + (slot * s.h_v + h) * per_head * bytes;
      State st(s.dk, s.dv);
      st.load(state, s.state_dtype, s.layout);
      const int hk = h / (s.h_v / s.h_qk);
      const auto q = example::load_qk(*a, a->q, b, hk), k = example::load_qk(*a, a->k, b, hk);
      const auto v = example::load_v(*a, b, h);
      example::Gate gate = example::gate_at(*a, b, h);
      if (b == 0) gate.decay = 1.f;  // BUG: the gate forgotten on this step
      st.step(q.data(), k.data(), v.data(), gate, s.scale, o.data());
      example::store_o(*a, b, h, o.data());
      st.store(state, s.state_dtype, s.layout);
    }
  return 0;
}

const gdn_variant kVariants[] = {
    {"decode_forgets_gate", GDN_OP_DECODE, GDN_BACKEND_CPU, 0, 0,
     "example plugin, deliberately wrong: row 0 skips its decay (verification must fail)", nullptr, decode, nullptr, 0},
};

const gdn_kernel_table kTable = {GDNBENCH_KERNEL_ABI_VERSION, 1, kVariants};

}  // namespace

extern "C" GDNBENCH_EXPORT const gdn_kernel_table* gdnbench_kernels(void) { return &kTable; }

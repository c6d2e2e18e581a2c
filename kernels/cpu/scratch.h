// Per-worker fp32 scratch of the CPU variants: a state buffer and the rows of `tokens` tokens.
//
// The row arrays (q, k, v, o, tmp) are placed at the same offset within a 4 KiB page as the state
// the kernel is working on. Then a row load never matches the low 12 address bits of a state
// store a few elements earlier ("4K aliasing", a false store-to-load dependency that cost up to
// 2x in the vk kernel) for power-of-two head sizes, whatever address the pool was allocated at.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

namespace gdn::cpu {

class Scratch {
 public:
  // state_elems may be 0 when the caller works on the state in place.
  Scratch(int64_t state_elems, int K, int V, int tokens = 1) {
    const int64_t TK = int64_t(tokens) * K, TV = int64_t(tokens) * V;
    // The state buffer is page-aligned; each row array gets a spare page to slide within.
    const int64_t sizes[kArrays] = {state_elems, TK + kPageFloats, TK + kPageFloats, TV + kPageFloats,
                                    TV + kPageFloats, V + kPageFloats};
    int64_t offset[kArrays], total = 0;
    for (int i = 0; i < kArrays; ++i) offset[i] = total, total += round_up(sizes[i]);
    void* p = std::aligned_alloc(kPage, std::size_t(total) * sizeof(float));
    if (!p) throw std::bad_alloc();
    mem_.reset(static_cast<float*>(p));
    for (int i = 0; i < kArrays; ++i) base_[i] = mem_.get() + offset[i];
    state = state_elems > 0 ? base_[0] : nullptr;
    align_rows_to(base_[0]);
  }

  // Slides the row arrays to the page offset of `target` (the state about to be updated).
  void align_rows_to(const void* target) {
    const int64_t shift = int64_t(reinterpret_cast<std::uintptr_t>(target) % kPage) / int64_t(sizeof(float));
    q = base_[1] + shift, k = base_[2] + shift, v = base_[3] + shift, o = base_[4] + shift, tmp = base_[5] + shift;
  }

  float* state;  // state_elems, page-aligned, or null when not asked for
  float* q;      // [tokens][K]
  float* k;      // [tokens][K]
  float* v;      // [tokens][V]
  float* o;      // [tokens][V]
  float* tmp;    // [V]: the kv kernel's pass scratch

 private:
  static constexpr int kArrays = 6;
  static constexpr std::size_t kPage = 4096;
  static constexpr int64_t kPageFloats = kPage / sizeof(float);
  static int64_t round_up(int64_t n) { return (n + kPageFloats - 1) / kPageFloats * kPageFloats; }

  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> mem_;
  float* base_[kArrays];
};

}  // namespace gdn::cpu

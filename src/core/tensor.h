// Tensor descriptions and non-owning views. An op's contract lists its tensors as TensorSpecs;
// the runner allocates them (host memory for the CPU backend, device memory for CUDA) and hands
// variants a TensorSet of views.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/types.h"

namespace gdn {

enum class Role {
  input,   // read only; filled from the seeded generator
  output,  // written by the variant; poisoned before a verification run
  inout,   // read and written in place (decode/mtp state pool); filled, then verified
};

// Which generator fills an input tensor (docs/method.md 3). The runner and the reference both
// go through inputs.h, so the values are the same everywhere.
enum class Fill {
  none,        // outputs
  qk,          // q, k: N(0,1) (uniform [0,1] for positive_keys)
  v,           // N(0,1)
  log_gate,    // g: logsigmoid(N(0,1))/16, 25 % of value heads 0; stress variants per dist
  beta,        // sigmoid(N(0,1)); 1 for beta_one
  state,       // h0 and pool: N(0,1); 8-bit pools: codes of N(0,1) at 4 sigma full scale
  state_scale, // the fp32 row scales of an 8-bit pool: (4 / Q) 2^U[-1,1]
  a_log,       // raw gate A_log [HV]
  raw_a,       // raw gate a
  dt_bias,     // raw gate dt_bias [HV]
  raw_b,       // raw gate b
  cu_seqlens,  // prefix sums of Shape::seqlens
  indices,     // pool slot per row from Shape::indices
  accepted,    // mtp rollback: accepted tokens of the previous step per row, uniform in 0..T
  checkpoint_indices,    // prefill checkpoints: slot per (sequence, checkpoint), docs/method.md 2.4
  checkpoint_positions,  // prefill explicit checkpoints: positions per (sequence, checkpoint)
};

struct TensorSpec {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> dims;
  Role role = Role::input;
  Fill fill = Fill::none;
  int64_t numel() const {
    int64_t n = 1;
    for (auto d : dims) n *= d;
    return n;
  }
  uint64_t bytes() const { return uint64_t(numel()) * dtype_size(dtype); }
};

struct Tensor {
  void* data = nullptr;  // host or device memory, per the backend
  TensorSpec spec;
  template <class T> T* as() const { return static_cast<T*>(data); }
  int64_t numel() const { return spec.numel(); }
  uint64_t bytes() const { return spec.bytes(); }
};

class TensorSet {
 public:
  void add(Tensor t) { tensors_[t.spec.name] = std::move(t); }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  const Tensor& at(const std::string& name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) throw std::out_of_range("tensor '" + name + "' is not part of this problem");
    return it->second;
  }
  // Pointer or nullptr when the tensor is absent (optional tensors such as h0).
  template <class T> T* ptr(const std::string& name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : static_cast<T*>(it->second.data);
  }
  const std::map<std::string, Tensor>& all() const { return tensors_; }

 private:
  std::map<std::string, Tensor> tensors_;
};

}  // namespace gdn

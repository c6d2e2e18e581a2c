#include "run/problem.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "core/checkpoints.h"
#include "core/errors.h"
#include "core/op.h"
#include "run/inputs.h"

namespace gdn {

HostBuffer::HostBuffer(std::size_t bytes) {
  // 64-byte alignment for vector loads; at least one line so empty tensors get a pointer.
  std::size_t rounded = ((bytes + 63) / 64) * 64;
  p_ = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!p_) throw runtime_error("host allocation of " + std::to_string(bytes) + " bytes failed");
}
HostBuffer::~HostBuffer() { std::free(p_); }

Problem::Problem(const Shape& s, ExecBackend& backend, uint64_t seed, int threads)
    : shape_(s), backend_(backend), specs_(op_def(s.op).tensors(s)) {
  for (auto& spec : specs_) {
    auto in = std::make_unique<HostBuffer>(spec.bytes());
    if (spec.role == Role::output) poison(spec, in->data());
    else fill_input(s, spec, in->data(), seed, threads);
    host_.add({in->data(), spec});
    host_mem_.push_back(std::move(in));
    if (spec.role != Role::input) {
      auto out = std::make_unique<HostBuffer>(spec.bytes());
      results_.add({out->data(), spec});
      host_mem_.push_back(std::move(out));
    }
    void* d = backend_.alloc(spec.bytes());
    dev_mem_.push_back(d);
    dev_.add({d, spec});
  }
}

Problem::~Problem() {
  for (void* d : dev_mem_) backend_.free(d);
}

void Problem::reset_device() {
  // Inputs and the initial pool as generated; outputs poisoned (the host copy of an output
  // holds the poison pattern).
  for (auto& spec : specs_) backend_.to_device(dev_.at(spec.name).data, host_.at(spec.name).data, spec.bytes());
  backend_.synchronize();
}

void Problem::download() {
  backend_.synchronize();
  for (auto& spec : specs_)
    if (spec.role != Role::input) backend_.to_host(results_.at(spec.name).data, dev_.at(spec.name).data, spec.bytes());
}

uint64_t Problem::footprint(const Shape& s, Backend where) {
  uint64_t tensors = 0, written = 0, reference = 0;
  for (auto& spec : op_def(s.op).tensors(s)) {
    tensors += spec.bytes();
    if (spec.role == Role::input) continue;
    written += spec.bytes();
    reference += uint64_t(spec.numel()) * sizeof(double);
  }
  if (where == Backend::cuda) return tensors;
  // The reference also keeps every checkpoint's state (docs/method.md 2.4) in double.
  const uint64_t states = uint64_t(s.seqlens.size()) * uint64_t(checkpoint_columns(s)) * uint64_t(s.h_v);
  reference += states * uint64_t(s.dk) * uint64_t(s.dv) * sizeof(double);
  // On the host everything lives in one memory: the generated inputs, the backend's own copy,
  // the outputs copied back, and while verifying the fp64 reference's full-size outputs (a
  // float state pool's reference is twice its size). Counting the tensors once, as a device
  // does, put a decode at batch 512 at 1.0 GiB where it peaked at 5.05 GiB.
  return 2 * tensors + written + reference;
}

}  // namespace gdn

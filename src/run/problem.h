// The tensors of one problem: a host copy holding the seeded inputs exactly as generated (what
// the reference reads), host buffers the outputs are copied back into, and the backend's own
// copy the variant runs on.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/shape.h"
#include "core/tensor.h"
#include "run/backend.h"

namespace gdn {

class HostBuffer {
 public:
  explicit HostBuffer(std::size_t bytes);
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  void* data() const { return p_; }

 private:
  void* p_ = nullptr;
};

class Problem {
 public:
  // Allocates every tensor on the host and on the backend and fills the inputs from `seed`.
  Problem(const Shape& s, ExecBackend& backend, uint64_t seed, int threads = 0);
  ~Problem();
  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;

  const Shape& shape() const { return shape_; }
  const std::vector<TensorSpec>& specs() const { return specs_; }
  const TensorSet& inputs() const { return host_; }        // generated values (initial pool included)
  const TensorSet& device() const { return dev_; }         // what the variant gets
  const TensorSet& results() const { return results_; }    // outputs copied back by download()

  // Copies the inputs (and the initial pool) to the backend and poisons the outputs there.
  void reset_device();
  // Copies every output and in-out tensor back into results().
  void download();

  // Bytes this problem takes in the backend's memory: on a GPU, its tensors once; on the host,
  // every copy a case holds at its peak (the generated inputs, the backend's copy, the outputs
  // read back and the fp64 reference's outputs while verifying).
  static uint64_t footprint(const Shape& s, Backend where = Backend::cuda);

 private:
  Shape shape_;
  ExecBackend& backend_;
  std::vector<TensorSpec> specs_;
  std::vector<std::unique_ptr<HostBuffer>> host_mem_;
  std::vector<void*> dev_mem_;
  TensorSet host_, dev_, results_;
};

}  // namespace gdn

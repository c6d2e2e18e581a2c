// Shared pieces of the GPU test suites: one CUDA backend per suite (released before the CUDA
// runtime tears down; the tests skip with the reason when there is none), and a readable account
// of a verification for failure messages.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "core/shape.h"
#include "report/record.h"
#include "run/backend.h"

namespace gdn::test {

template <class Param> class CudaSuite : public testing::TestWithParam<Param> {
 protected:
  static void SetUpTestSuite() { backend_ = make_cuda_backend(0, &why_no_device_); }
  static void TearDownTestSuite() { backend_.reset(); }
  static inline std::unique_ptr<ExecBackend> backend_;
  static inline std::string why_no_device_;
};

// A decode or mtp problem of 128 x 128 heads (decode: tokens = 1).
inline Shape step_shape(OpKind op, int64_t batch, int tokens, int h_qk, int h_v, Layout layout,
                        DType state = DType::f32) {
  Shape s;
  s.op = op;
  s.batch = batch;
  s.tokens = tokens;
  s.h_qk = h_qk, s.h_v = h_v;
  s.dk = s.dv = 128;
  s.layout = layout;
  s.state_dtype = state;
  return s;
}

inline std::string sci(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

// One line per checked tensor: pass/FAIL, error against tolerance and the bit-level counts.
inline std::string describe(const Verification& v) {
  std::string out = "scope " + v.scope + ":";
  for (const auto& c : v.checks)
    out += "\n  " + c.tensor + (c.pass ? " pass" : " FAIL") + " rel_l2 " + sci(c.rel_l2) + " (tol " +
           sci(c.tolerance) + ") max_abs " + sci(c.max_abs) + " unwritten " + std::to_string(c.unwritten) +
           " nonfinite " + std::to_string(c.nonfinite) + " untouched_diff " + std::to_string(c.untouched_diff);
  return out;
}

}  // namespace gdn::test

// One launch of a variant captured into a CUDA graph (global capture mode: any synchronising call
// inside the launch fails the capture) and replayed on a problem's freshly reset tensors. Shared by
// the GPU suites that check a captured launch against a direct one.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <functional>

#include "core/registry.h"
#include "run/backend.h"
#include "run/problem.h"

namespace gdn::test {

// Replays the captured launch `replays` times; after each, p's outputs are downloaded and
// `check(replay)` runs.
inline void replay_in_graph(const Variant& v, const Shape& s, Problem& p, ExecBackend& backend, int replays,
                            const std::function<void(int)>& check) {
  const LaunchContext ctx = backend.launch_context();
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  ASSERT_NE(stream, nullptr) << "capture needs a non-default stream";
  p.reset_device();
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  v.launch(s, p.device(), ctx);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < replays; ++replay) {
    p.reset_device();
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    p.download();
    check(replay);
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

}  // namespace gdn::test

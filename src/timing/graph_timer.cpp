#include "timing/graph_timer.h"

#include <string>
#include <vector>

#include "core/errors.h"
#include "core/cuda_check.h"

namespace gdn {
namespace {

class GraphTimer final : public Timer {
 public:
  GraphTimer(std::unique_ptr<Timer> inner, cudaStream_t stream) : inner_(std::move(inner)), stream_(stream) {}
  ~GraphTimer() override {
    if (exec_) cudaGraphExecDestroy(exec_);
  }

  std::string name() const override { return inner_->name(); }

  std::vector<Sample> measure(const SampleHooks& hooks, int n) override {
    if (n <= 0) return {};
    capture(hooks.launch);
    SampleHooks replay;
    replay.before = hooks.before;
    replay.launch = [this] { CUDA_CHECK(cudaGraphLaunch(exec_, stream_)); };
    return inner_->measure(replay, n);
  }

 private:
  void capture(const std::function<void()>& launch) {
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    cudaGetLastError();
    // Thread-local mode: calls that are illegal during capture (allocation, synchronisation)
    // fail only when this thread makes them, which is what a variant must not do.
    CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    try {
      launch();
    } catch (...) {
      cudaGraph_t broken = nullptr;
      cudaStreamEndCapture(stream_, &broken);
      if (broken) cudaGraphDestroy(broken);
      cudaGetLastError();
      throw;
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t launch_err = cudaGetLastError();
    const cudaError_t end_err = cudaStreamEndCapture(stream_, &graph);
    if (launch_err != cudaSuccess || end_err != cudaSuccess) {
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      const cudaError_t err = launch_err != cudaSuccess ? launch_err : end_err;
      throw runtime_error("capturing the variant into a CUDA graph failed: " + cuda_error_text(err) +
                          " (in graph mode a variant may only enqueue work on ctx.stream: no allocation, "
                          "no synchronisation, no other stream)");
    }
    size_t nodes = 0;
    cudaGraphGetNodes(graph, nullptr, &nodes);
    if (nodes == 0) {
      cudaGraphDestroy(graph);
      throw runtime_error("the variant enqueued no work while being captured into a CUDA graph");
    }
    if (exec_) {
      cudaGraphExecUpdateResultInfo info{};
      if (cudaGraphExecUpdate(exec_, graph, &info) != cudaSuccess) {
        cudaGetLastError();  // topology changed: instantiate afresh below
        cudaGraphExecDestroy(exec_);
        exec_ = nullptr;
      }
    }
    if (!exec_) {
      const cudaError_t err = cudaGraphInstantiate(&exec_, graph, 0);
      if (err != cudaSuccess) {
        exec_ = nullptr;
        cudaGraphDestroy(graph);
        throw runtime_error("instantiating the captured CUDA graph failed: " + cuda_error_text(err));
      }
    }
    cudaGraphDestroy(graph);
    // One untimed replay keeps the graph's first-launch cost (upload) out of the samples.
    CUDA_CHECK(cudaGraphLaunch(exec_, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  std::unique_ptr<Timer> inner_;
  cudaStream_t stream_;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace

std::unique_ptr<Timer> make_graph_timer(std::unique_ptr<Timer> inner, cudaStream_t stream) {
  return std::make_unique<GraphTimer>(std::move(inner), stream);
}

}  // namespace gdn

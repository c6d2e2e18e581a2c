// Graph mode: the variant's launch is captured into a CUDA graph on the timing stream and each
// sample replays it; the wrapped timer (CUPTI or events) times the replay, and before() (the
// flush) stays outside the graph.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "timing/timer.h"

namespace gdn {

// Every measure() call captures hooks.launch once (so a timer reused for another case never
// replays a stale graph; the executable graph is updated in place when the topology allows),
// then times n replays. name() is the wrapped timer's.
std::unique_ptr<Timer> make_graph_timer(std::unique_ptr<Timer> inner, cudaStream_t stream);

}  // namespace gdn

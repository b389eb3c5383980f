// RAII for CUDA streams, events and graphs: unique_ptr with a deleter, move-only by construction.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <memory>

#include "kernels/cuda/check.h"

namespace dlb::cuda {

struct StreamDeleter {
  void operator()(cudaStream_t s) const noexcept { DLB_CHECK_NOEXCEPT(cudaStreamDestroy(s)); }
};
struct EventDeleter {
  void operator()(cudaEvent_t e) const noexcept { DLB_CHECK_NOEXCEPT(cudaEventDestroy(e)); }
};
struct GraphDeleter {
  void operator()(cudaGraph_t g) const noexcept { DLB_CHECK_NOEXCEPT(cudaGraphDestroy(g)); }
};
struct GraphExecDeleter {
  void operator()(cudaGraphExec_t g) const noexcept { DLB_CHECK_NOEXCEPT(cudaGraphExecDestroy(g)); }
};
using Stream = std::unique_ptr<CUstream_st, StreamDeleter>;
using Event = std::unique_ptr<CUevent_st, EventDeleter>;
using Graph = std::unique_ptr<CUgraph_st, GraphDeleter>;
using GraphExec = std::unique_ptr<CUgraphExec_st, GraphExecDeleter>;

// A non-blocking stream: the timed work never syncs with the legacy default stream.
inline Stream MakeStream() {
  cudaStream_t s = nullptr;
  DLB_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return Stream(s);
}

inline Event MakeEvent() {
  cudaEvent_t e = nullptr;
  DLB_CHECK(cudaEventCreate(&e));
  return Event(e);
}

// The work `body` enqueues on `stream`, captured (this thread's captures only) and instantiated,
// then uploaded so that its first launch pays no setup. A body that throws ends the capture (the
// stream is usable again) and its error goes on. Run the body once eagerly first: libraries load
// their code on first use, which must not happen inside a capture.
inline GraphExec Capture(cudaStream_t stream, const std::function<void()>& body) {
  DLB_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    body();
  } catch (...) {
    // The original error is the news: ending the broken capture's status is only cleared.
    cudaGraph_t broken = nullptr;
    if (cudaStreamEndCapture(stream, &broken) != cudaSuccess) cudaGetLastError();
    Graph discard(broken);
    throw;
  }
  cudaGraph_t raw_graph = nullptr;
  DLB_CHECK(cudaStreamEndCapture(stream, &raw_graph));
  const Graph graph(raw_graph);
  cudaGraphExec_t raw_exec = nullptr;
  DLB_CHECK(cudaGraphInstantiate(&raw_exec, raw_graph, 0));
  GraphExec exec(raw_exec);
  DLB_CHECK(cudaGraphUpload(raw_exec, stream));
  return exec;
}

}  // namespace dlb::cuda

// RAII for CUDA streams, events and graphs: unique_ptr with a deleter, move-only by construction.
#pragma once

#include <cuda_runtime.h>

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

}  // namespace dlb::cuda

// cuDNN's fused SDPA forward over tensors a caller owns: the attention family's forward graph
// (kernels/cudnn/attn_graph.h: causal, grouped-query through K/V with fewer heads, fp32 softmax
// and accumulation) with the caller's strides, planned once with heuristics mode A's first
// configuration that builds (then the fallback list), as PyTorch's cuDNN backend picks. For ops
// whose step runs attention among other work (the inference step's prefill,
// kernels/cublas/infer.h): they bind each set of tensors once and enqueue it as often as they like,
// so a CUDA graph can capture it.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/common/dtype.h"
#include "kernels/common/op.h"
#include "kernels/common/shapes.h"

namespace dlb::cudnn {

struct SdpaState;  // graph, plan, workspace, statistics and the bound tensors (sdpa.cpp)

class SdpaForward {
 public:
  // Strides of the logical (B, H, S, D) of Q and O and of the (B, G, S, D) of K and V.
  struct Strides {
    std::array<int64_t, 4> q, kv;
  };
  // Whether cuDNN's fused attention takes this forward here: bf16 or f16, head_dim a multiple of
  // 8 within the device's limit, sm_80 or newer; the bare reason otherwise.
  static Support Supports(const AttnShape& shape, DType dt);
  // Builds the graph and the plan on `stream` (throws Unsupported when no engine configuration
  // builds); allocates the workspace and, with `stats`, the softmax statistics the graph writes
  // (without: the inference graph, O alone, as PyTorch builds it under no_grad). shape.kv_seq
  // sets the keys' length apart from the queries' (decode over a cache; no causal mask then).
  // With `candidates`, every engine configuration that builds and keeps the inputs' precision is
  // kept (heuristics A, B and the fallback list, and every engine with its default knobs), the
  // heuristics' first chosen, and the workspace sized for the largest: Choose() switches among
  // them, for a caller that times them where they run.
  SdpaForward(const AttnShape& shape, DType dt, const Strides& strides, cudaStream_t stream,
              bool stats = true, bool candidates = false);
  ~SdpaForward();
  SdpaForward(SdpaForward&&) noexcept;
  SdpaForward& operator=(SdpaForward&&) noexcept;
  SdpaForward(const SdpaForward&) = delete;
  SdpaForward& operator=(const SdpaForward&) = delete;

  // Binds one set of tensors (their addresses are kept; cuDNN's variant pack takes them
  // non-const) and returns its index for Run.
  int Bind(void* q, void* k, void* v, void* o);
  // Enqueues the attention of a bound set on the stream; no sync, no allocation.
  void Run(int bound);
  // "cuDNN 9.19.0 fused SDPA fwd, engine 8 ... from heur_a#0": the chosen configuration's.
  std::string label() const;
  // The configurations kept (one without `candidates`), the chosen one first until Choose().
  int Candidates() const;
  // Runs configuration i (< Candidates()) from now on; a CUDA graph captured before keeps the one
  // it captured.
  void Choose(int i);

 private:
  std::unique_ptr<SdpaState> state_;
};

}  // namespace dlb::cudnn

// cuDNN 9 fused scaled-dot-product attention (its flash-attention engines), forward and backward,
// through the backend graph API: the operation graph cudnn-frontend's composite SDPA nodes lower
// to (kernels/cudnn/attn_graph.h), engine configurations from cuDNN's heuristics as for the
// convolutions (kernels/cudnn/engines.h). RunConfig::algo: "heuristic" takes heuristics mode A's
// first configuration that builds (then the fallback list), what PyTorch's cuDNN backend does;
// "search" times every usable configuration of modes A, B and the fallback list once in the
// constructor; "cache" rebuilds the winner the autotune cache recorded, or searches and records.
//   dtypes: bf16 and f16 (fp32 scores, softmax and accumulation; P and dS are rounded to the input
//   type for the tensor-core matmuls, as in every flash attention); f32/tf32 are unsupported, the
//   fused engines take 16-bit inputs only.
//   Layout: Q, K, V, O, dO and the gradients are (batch, heads, seq, head_dim) contiguous, with
//   kv_heads for K, V, dK and dV: what torch.nn.functional.scaled_dot_product_attention gets from
//   contiguous (B, H, S, D) tensors. The softmax statistics (log-sum-exp) are float (B, H, S, 1).
//   The forward is the training forward: it writes O and the statistics. The backward's
//   constructor runs the forward once, untimed, for O and the statistics.
//   Scale 1/sqrt(head_dim); causal: query i sees keys 0..i; grouped-query attention through K/V
//   with fewer heads (the backward sums the per-query-head dK/dV over each group inside the graph).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/op.h"
#include "kernels/common/shapes.h"

namespace dlb::cudnn {

struct AttnState;  // graphs, buffers and the chosen plan (kernels/cudnn/attn.cpp)

class CudnnAttn {
 public:
  static constexpr bool kGpu = true;
  static constexpr const char* kBackend = "cudnn";

  // No for an invalid shape, f32/tf32, no CUDA device, a GPU older than sm_80,
  // or a head_dim the fused engines do not take (a multiple of 8, at most 256 on sm_90, 128
  // elsewhere). Asks the device once per process; builds no graph.
  static Support Supports(const AttnShape& shape, const RunConfig& cfg);
  // Seeds Q, K, V (and dO) on the device, builds the graph and the plan; throws Unsupported when
  // no engine configuration builds.
  CudnnAttn(const AttnShape& shape, const RunConfig& cfg);
  ~CudnnAttn();
  CudnnAttn(CudnnAttn&&) noexcept;
  CudnnAttn& operator=(CudnnAttn&&) noexcept;
  CudnnAttn(const CudnnAttn&) = delete;
  CudnnAttn& operator=(const CudnnAttn&) = delete;

  // One pass, the shape's: the forward, or the backward alone.
  void Run();
  // Forward: O, shape (B, H, S, D). Backward: dQ, dK and dV one after the other, logical order,
  // shape {QElems() + 2 KvElems()}.
  HostTensor Output() const;
  // The same at these flat indices, gathered on the device.
  HostTensor OutputAt(const std::vector<int64_t>& flat) const;
  Cost cost() const;
  std::string label() const;
  // setup_ms: graphs, plans and the search (or the cached winner's rebuild).
  std::vector<std::pair<std::string, double>> Counters() const;
  StreamRef stream() const;

 private:
  std::unique_ptr<AttnState> state_;
};

}  // namespace dlb::cudnn

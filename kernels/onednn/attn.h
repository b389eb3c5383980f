// Scaled-dot-product attention on the CPU from oneDNN primitives (matmul, binary, softmax,
// reorder), in the logical layouts of shapes.h. The query heads that share a kv head (grouped-query
// attention) are stacked into one [group * seq, head_dim] matrix, so every product is a plain
// batched matmul over (batch, kv head) without broadcasting, and dK/dV sum over the group's heads
// inside the matmul's reduction. The S x S scores live in f32 buffers for a chunk of kv groups at
// a time (at most kChunkBytes each), reused by every chunk.
//   fwd: S = scale Q K^T [+ causal -inf mask], P = softmax(S), O = P V.
//   bwd: recomputes P as the forward does (FlashAttention's backward does the same; its 2.5x FLOP
//        count is these five matmuls), then dV = P^T dO, dP = dO V^T, dS = softmax_backward(P, dP)
//        = P (dP - rowsum(P dP)), dQ = scale dS K, dK = scale dS^T Q.
// bf16: Q, K, V, dO and the outputs are bf16, scores and softmax f32, P and dS reordered to bf16
// for the matmuls that read them (f32 accumulation throughout).
#pragma once

#include <dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/common/op.h"

namespace dlb::onednn {

class OneDnnAttn {
 public:
  static constexpr bool kGpu = false;
  static constexpr const char* kBackend = "onednn";
  // The largest f32 score buffer of one chunk; one kv group's scores (group * seq^2 floats) above
  // kMaxGroupBytes are refused.
  static constexpr double kChunkBytes = 64.0 * (1 << 20);
  static constexpr double kMaxGroupBytes = 1024.0 * (1 << 20);
  static Support Supports(const AttnShape& s, const RunConfig& cfg);
  OneDnnAttn(const AttnShape& s, const RunConfig& cfg);
  void Run();
  HostTensor Output() const;
  HostTensor OutputAt(const std::vector<int64_t>& flat) const;
  Cost cost() const;
  std::string label() const { return label_; }

 private:
  using Args = std::unordered_map<int, dnnl::memory>;
  struct Step {  // one primitive and its arguments for every chunk
    dnnl::primitive prim;
    std::vector<Args> args;
  };
  float ElementAt(int64_t flat) const;
  // The construction's phases: the tensors, seeded (and the causal mask); the steps of the scores
  // (Q K^T, mask, softmax, the bf16 copy of P), then those of the forward or the backward.
  struct Plan;
  void Allocate(uint64_t seed);
  void AddScoreSteps(Plan& plan);
  void AddForwardSteps(Plan& plan);
  void AddBackwardSteps(Plan& plan);

  AttnShape shape_;
  DType dtype_;
  int64_t groups_per_chunk_ = 1;
  dnnl::memory q_, k_, v_, do_, o_, dq_, dk_, dv_;  // whole tensors (o_ fwd; do_, d* bwd)
  dnnl::memory scores_, dp_, low_, mask_, scratchpad_;
  std::vector<Step> steps_;  // in order, each over every chunk before the next chunk's
  std::string label_;
};

}  // namespace dlb::onednn

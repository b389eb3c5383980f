// One step of a Llama-style decoder (kernels/common/infer.h) on the GPU: prefill of B prompts or
// decode of one token for B sequences over a KV cache, the projections, MLP and LM head cuBLASLt
// GEMMs, the rest small CUDA kernels of the suite's own (kernels/cuda/infer_kernels.h), the whole
// step captured once in a CUDA graph (after one eager step) that Run() launches.
//   weights: bf16, seeded on the device (the values the reference rounds to bf16): q, k and v in
//            one matrix, gate and up in another, so a step is 4 GEMMs a layer and reads every
//            weight once; each GEMM is the TN weight-streaming y = x W^T (M = the step's tokens:
//            the batch at decode), bf16 x bf16 with f32 accumulation and f32 output, the o and
//            down projections adding into the f32 residual (beta 1);
//   activations: the residual stream f32, what a GEMM reads bf16 (RMSNorm, SwiGLU and attention
//            write it), the fused projections' outputs f32;
//   KV cache: contiguous, B x kv_heads x capacity x head_dim per layer for K and V, bf16, appended
//            in place (decode: position ctx, capacity ctx + 1, so every step is the same step;
//            prefill: 0..P-1). A paged cache is not implemented;
//   attention: one kernel for both phases, flash-decoding style: each block one query row and
//            head over a chunk of keys (grouped-query: query head h reads kv head
//            h / (heads / kv_heads); causal), an online softmax with f32 scores and accumulation,
//            a second kernel merging the chunks. cuDNN's fused SDPA is not used yet.
//   fp8 weights are refused: cuBLASLt's fp8 GEMMs take fp8 activations too, whose per-step
//            quantisation this step does not have.
// Output(): the logits of each sequence's last token, B x vocab, f32.
#pragma once

#include <cublasLt.h>

#include <string>
#include <vector>

#include "kernels/common/infer.h"
#include "kernels/common/op.h"
#include "kernels/cublas/gemm.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/handles.h"
#include "kernels/cuda/infer_kernels.h"

namespace dlb::cublas {

class NativeInfer {
 public:
  static constexpr bool kGpu = true;
  static constexpr const char* kBackend = "native";
  // No for an invalid shape, weights other than bf16, a head_dim above 256 or no CUDA device.
  static Support Supports(const InferShape& s, const RunConfig& cfg);
  // Seeds the weights, cache and tokens on the device, plans the GEMMs, runs one eager step and
  // captures the step in a CUDA graph; the logits are poisoned after.
  NativeInfer(const InferShape& s, const RunConfig& cfg);
  void Run();
  HostTensor Output() const;
  Cost cost() const;
  std::string label() const { return label_; }
  const InferShape& shape() const { return shape_; }
  // Bytes of the KV cache one step reads and writes (part of cost().bytes).
  double KvBytes() const;
  StreamRef stream() const { return stream_.get(); }

 private:
  // One planned GEMM y (rows x out, f32) = x (rows x in, bf16) W^T (W out x in, bf16).
  struct Gemm {
    MatmulDesc desc;
    Layout a, b, c;
    cublasLtMatmulAlgo_t algo{};
  };
  Gemm Plan(int64_t rows, int64_t in, int64_t out);
  void Launch(const Gemm& g, const uint16_t* w, const uint16_t* x, float* y, bool accumulate);
  void Step();

  struct Layer {
    cuda::DeviceBuffer<uint16_t> wqkv, wo, w13, w2;
    cuda::DeviceBuffer<float> attn_norm, ffn_norm;
  };

  InferShape shape_;
  int64_t rows_ = 0;
  cuda::InferAttnDims attn_;
  cuda::AttnSplit split_;
  cuda::Stream stream_;
  LtHandle handle_;
  cuda::DeviceBuffer<unsigned char> workspace_;
  Gemm g_qkv_, g_o_, g_13_, g_2_, g_lm_;
  std::vector<Layer> layers_;
  cuda::DeviceBuffer<uint16_t> embed_, lm_head_, cache_;  // cache: layers x (K, V) x B x kv_heads
                                                          // x capacity x head_dim
  cuda::DeviceBuffer<float> final_norm_, cos_, sin_;
  cuda::DeviceBuffer<int32_t> tokens_;
  cuda::DeviceBuffer<float> x_, qkv_, partial_, gu_, logits_;
  cuda::DeviceBuffer<uint16_t> h_, q_, attn_out_, act_, last_;
  cuda::Graph graph_;
  cuda::GraphExec exec_;
  std::string label_;
};

}  // namespace dlb::cublas

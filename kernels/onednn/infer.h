// One step of a Llama-style decoder (kernels/common/infer.h) on the CPU: prefill of B prompts or
// decode of one token for B sequences over a KV cache, its projections, MLP and LM head oneDNN
// matmuls, a prefill's attention products too, a decode step's attention AVX-512 loops (where the
// CPU has them), the rest (RMSNorm, rotary embeddings, SwiGLU, the cache append and the head
// transposes) vectorized loops between them, over OpenMP threads where large enough.
//   weights: f32, bf16 or int8, reordered once into the layout each matmul picks (format any): q, k
//            and v in one matrix, gate and up in another, so a step reads every weight once;
//            int8 with one f32 scale per output channel, decompressed to bf16 inside the matmul
//            (oneDNN 3.4+: the fpmath mode's apply_to_int), the rest of the step as bf16's;
//   activations: the residual stream f32, what a matmul reads in the activations' dtype (f32's
//            f32, bf16's and int8's bf16), its output f32 (the o and down projections add into the
//            residual as a sum post-op);
//   KV cache: B x kv_heads x capacity x head_dim per layer for K and V, in the activations' dtype,
//            appended in place (decode: position ctx, capacity ctx + 1; prefill: 0..P-1); the
//            loops' K in tiles of 64 keys, each transposed (head_dim x 64), read along keys;
//   attention: the query heads of a kv head stacked into one matrix (grouped-query), scores f32
//            for all B x heads at once, scaled in the matmul, the causal mask (prefill) added,
//            softmax writing P in the activations' dtype, P times V; decode's loops take each kv
//            head's query heads together, P in f32.
// Output(): the logits of each sequence's last token, B x vocab, f32.
#pragma once

#include <dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/common/infer.h"
#include "kernels/common/op.h"

namespace dlb::onednn {

class OneDnnInfer {
 public:
  static constexpr bool kGpu = false;
  static constexpr const char* kBackend = "onednn";
  static Support Supports(const InferShape& s, const RunConfig& cfg);
  OneDnnInfer(const InferShape& s, const RunConfig& cfg);
  void Run();
  HostTensor Output() const;
  Cost cost() const;
  std::string label() const { return label_; }
  const InferShape& shape() const { return shape_; }
  // Bytes of the KV cache one step reads and writes (part of cost().bytes).
  double KvBytes() const;

 private:
  using Args = std::unordered_map<int, dnnl::memory>;
  struct Call {
    const dnnl::primitive* prim;
    Args args;
  };
  struct Layer {
    dnnl::memory wqkv, wo, w13, w2, k, v;
    dnnl::memory sqkv, so, s13, s2;  // int8: the matrices' per-output-channel scales
    std::vector<float> attn_norm, ffn_norm;
    std::vector<Call> calls;  // qkv, q k^T, p v, o, gate/up, down: their arguments built once
  };
  void Norm(const float* x, const std::vector<float>& w, int64_t rows, int64_t stride, void* out);
  void RopeAndAppend(const Layer& layer);
  void HeadsBack();
  void SwiGlu();
  // A decode step's attention without oneDNN (attend_in_loops_).
  void Attend(const Layer& layer);
  // Where element e of position pos's key (value: its value) lies in the cache's block bh (batch x
  // kv head): in row pos of D, or with attend_in_loops_ a key down a column of its tile of
  // kKeyTile keys (D x kKeyTile, the tiles one after the other).
  int64_t CacheAt(int64_t bh, int64_t pos, int64_t e, bool value) const;
  // Elements of a layer's K cache: B x kv_heads blocks, of whole tiles with attend_in_loops_.
  int64_t CacheElements() const;
  // Whether a loop over `elements` runs over the OpenMP team: not on a step planned for one thread
  // (serial_), nor below kMinParallel elements.
  bool Split(int64_t elements) const;

  InferShape shape_;
  DType dt_;      // the weights'
  DType act_dt_;  // the activations', KV cache's, embedding's and norms': f32 or bf16
  int64_t rows_ = 0, group_ = 0, keys_ = 0;
  std::vector<Layer> layers_;
  std::vector<float> embed_, final_norm_, cos_, sin_;  // cos/sin: new tokens x head_dim / 2
  std::vector<int64_t> tokens_;
  dnnl::memory lm_head_, lm_scales_, x_, h_, qkv_, q_, scores_, p_, o_, attn_, gu_, act_, last_,
      logits_, mask_, scratch_;
  dnnl::primitive mm_qkv_, mm_o_, mm_13_, mm_2_, mm_lm_, mm_qk_, mm_pv_, mask_add_, softmax_;
  Args softmax_args_, mask_args_, lm_args_;
  bool masked_ = false;
  bool serial_ = false;  // the step planned for and run on one thread (kMinParallelMacs)
  bool attend_in_loops_ = false;  // decode attention in AVX-512 loops, keys in transposed tiles
  std::vector<float> acc_;  // their scratch: each (batch, kv head)'s query heads x (head_dim + 1)
  std::string label_;
};

}  // namespace dlb::onednn

// The inference family's decoder (kernels/common/infer.h) in plain LibTorch ops, written as
// gpt-fast (pytorch-labs/gpt-fast model.py) and the PyTorch peer (tools/peers/pytorch/infer.py)
// write it: q/k/v as one Linear and gate/up as another, RMSNorm computed in f32 and cast back,
// rotary embeddings (rotate-half pairs) from a precomputed table in f32, a static preallocated KV
// cache a layer written in place at the step's positions, grouped-query SDPA
// (compat::GqaAttention), SwiGLU, the LM head on each sequence's last token. The residual stream is
// in the weights' dtype, as there. Shared by the CPU and GPU ops (kernels/torch/infer.h) and the
// GPU's f32 check.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "kernels/common/infer.h"

namespace dlb::libtorch {

struct InferModel {
  struct Layer {
    torch::Tensor attn_norm, wqkv, wo, ffn_norm, w13, w2;
    torch::Tensor k, v;  // batch x kv_heads x capacity x head_dim, views of `cache`
  };
  InferShape shape;
  // The ops: the cache holds CacheLen() positions and a step writes its keys and values at
  // FirstPos() in place. The f32 check: it holds the FirstPos() positions before the step, in its
  // own dtype, and a step attends over them widened beside its new keys, which stay f32.
  bool append_in_place = true;
  std::vector<Layer> layers;
  torch::Tensor cache;  // (2 x layers) x batch x kv_heads x capacity x head_dim: K0, V0, K1, ...
  torch::Tensor embed, final_norm, lm_head;
  torch::Tensor tokens;    // batch x new tokens, int64
  torch::Tensor cos, sin;  // new tokens x head_dim / 2, f32
  torch::Tensor logits;    // an op's output: the last step's (poisoned before the first)

  // One step: the logits of each sequence's last new token, batch x vocab, f32. Allocates its
  // intermediates through LibTorch; no host synchronisation (a CUDA graph can capture it).
  torch::Tensor Step() const;
};

// How the seeded values (kernels/common/infer.h) reach a model's tensors: on the host for the CPU,
// on the device for the GPU. Each writes into a contiguous tensor of the model's device.
struct InferFills {
  // The seeded matrix `index` (rows x cols, out x in: dst's shape) in dst's dtype.
  std::function<void(const torch::Tensor& dst, int index)> matrix;
  std::function<void(const torch::Tensor& dst)> embedding;  // vocab x dim
  // Decode: the seeded prefix, positions 0..ctx-1 of `cache` (the model's layout).
  std::function<void(const torch::Tensor& cache)> cache;
};

// The seeded values made on the host in dt (the CPU op's, and a CPU model in the GPU's layouts).
InferFills HostInferFills(const InferShape& s, uint64_t seed, DType dt);

// Where a model lives and in which dtypes: `weights` the matrices, norms and embedding (the step
// computes in it), `cache_dtype` the KV cache; `norm_dt` the dtype the norms' seeded values are
// rounded to.
struct InferPlacement {
  torch::TensorOptions weights;
  torch::ScalarType cache_dtype = torch::kFloat;
  DType norm_dt = DType::kF32;
  bool append_in_place = true;
};

// The seeded model of `s`: weights through `fills`, the norms, tokens and rotary table from the
// host; the cache zero, then (decode) its seeded prefix.
std::unique_ptr<InferModel> BuildInferModel(const InferShape& s, uint64_t seed,
                                            const InferPlacement& where, const InferFills& fills);

}  // namespace dlb::libtorch

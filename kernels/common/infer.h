// LLM inference: the Llama-style decoder every inference op and the float64 reference
// (kernels/reference/infer.h) compute, one step of it, and the seeded weights, KV cache and tokens
// they all start from, so that their logits can be compared number for number.
//
// The decoder (Llama 2/3): x = embed[token]; per layer
//   h = RMSNorm(x) * attn_norm; q, k, v = h Wq^T, h Wk^T, h Wv^T; rotary embeddings on q and k
//   (rotate-half pairs (i, i + head_dim/2), angle pos * theta^(-2i/head_dim)); k and v appended to
//   the cache; grouped-query attention (query head h reads kv head h / (heads / kv_heads)), causal;
//   x += attn Wo^T; h = RMSNorm(x) * ffn_norm; x += (silu(h W1^T) * (h W3^T)) W2^T;
// then logits = RMSNorm(x) * final_norm Wlm^T for the last token of each sequence.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/dtype.h"

namespace dlb {

struct LlamaConfig {
  std::string name;
  int64_t layers = 0, dim = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0;
  double rope_theta = 10000;
  double norm_eps = 1e-5;

  int64_t QDim() const { return heads * head_dim; }
  int64_t KvDim() const { return kv_heads * head_dim; }
  // Multiply-add weights of one layer (q, k, v, o projections and the three MLP matrices).
  double LayerMatmulParams() const;
  // Every weight a step reads whole: the layers' matrices and norms, the final norm, the LM head
  // (the embedding is a lookup, counted by the rows read).
  double StepParams() const;
  // The part of StepParams() in matrices (the layers' and the LM head): what an 8-bit step holds
  // in 8 bits, beside norms it keeps in its activations' dtype.
  double StepMatrixParams() const;
  // Positive sizes, heads a multiple of kv_heads, an even head_dim.
  bool Valid() const;
};

enum class InferPhase { kPrefill, kDecode };
inline const char* Name(InferPhase p) { return p == InferPhase::kPrefill ? "prefill" : "decode"; }

// One step. prefill: `batch` prompts of `ctx` tokens each at positions 0..ctx-1, the cache empty
// before and holding them after; logits of each prompt's last token. decode: one token for each of
// `batch` sequences at position ctx, the cache holding positions 0..ctx-1 before; the step appends
// position ctx in place and attends ctx + 1 keys.
struct InferShape {
  LlamaConfig model;
  InferPhase phase = InferPhase::kDecode;
  int64_t batch = 1;
  int64_t ctx = 0;

  int64_t NewTokens() const { return phase == InferPhase::kPrefill ? ctx : 1; }  // a sequence
  int64_t FirstPos() const { return phase == InferPhase::kPrefill ? 0 : ctx; }
  int64_t CacheLen() const { return FirstPos() + NewTokens(); }  // positions a step leaves
  // Multiply-adds x 2: the projections, MLPs and LM head of every new token, and attention's two
  // products over the keys each token sees (causal).
  double Flops() const;
  // Compulsory bytes of one step: every matrix once (matrices_dt), the norms, the embedding rows
  // read and the KV cache read (positions before the step) and written (new positions) in rest_dt,
  // the logits written (f32). An 8-bit step's matrices are 1 byte a weight, the rest in its
  // activations' dtype; f32 and bf16 steps hold everything in one dtype. The scales of 8-bit
  // matrices (one float per tensor or per output channel) are left out: under 0.2% of a step.
  double Bytes(DType matrices_dt, DType rest_dt) const;
  double KvReadBytes(DType cache_dt) const;
  double KvWrittenBytes(DType cache_dt) const;
  bool Valid() const { return model.Valid() && batch > 0 && ctx > 0; }
};
// What an op says of a shape that is not Valid().
inline constexpr const char* kInvalidInferShape =
    "model sizes, batch and context must be positive, heads a multiple of kv_heads, head_dim even";

// The seeded state every op and the reference start from, each tensor rounded to the dtype.
// Matrices are row-major out x in (torch.nn.Linear's layout), uniform [-1, 1) times a power of two
// near 1/sqrt(in) (exact in every dtype, so a GPU op can seed its own copy); norm weights
// 1 + [-1, 1)/8; the embedding uniform [-1, 1). Tensor seeds: TensorSeed(seed, WeightIndex(...)).
enum class LlamaTensor { kAttnNorm, kWq, kWk, kWv, kWo, kFfnNorm, kW1, kW3, kW2 };
inline constexpr int kLlamaLayerTensors = 9;
int WeightIndex(int layer, LlamaTensor t);  // 100 + layer * 9 + t
inline constexpr int kEmbedIndex = 10;      // vocab x dim
inline constexpr int kFinalNormIndex = 11;  // dim
inline constexpr int kLmHeadIndex = 12;     // vocab x dim
inline constexpr int kTokensIndex = 0;      // batch x new tokens, in [0, vocab)
inline constexpr int kCacheIndex = 1;       // decode: the prefilled cache, below
// The power of two a matrix with `in` inputs is scaled by: 2^-round(log2(sqrt(in))).
float WeightScale(int64_t in);
// The scale of a seeded matrix with `in` inputs held in an 8-bit dtype: its storage's scale times
// WeightScale(in), a power of two, so that stored x scale is exactly SeededMatrix's value (which
// the float64 reference computes with); WeightScale(in) for the other dtypes.
float MatrixScale(int64_t in, DType dt);

// One seeded tensor's values (rows x cols), rounded to dt.
std::vector<float> SeededMatrix(uint64_t seed, int index, int64_t rows, int64_t cols, DType dt);
std::vector<float> SeededNorm(uint64_t seed, int index, int64_t dim, DType dt);
// The prompt or next tokens, batch x shape.NewTokens().
std::vector<int64_t> SeededTokens(uint64_t seed, const InferShape& shape);
// Decode: the cache before the step, as keys after their rotary embedding, uniform [-1, 1) rounded
// to dt. Layout batch x kv_heads x ctx x head_dim per layer, K then V:
// TensorSeed(seed, kCacheIndex) streams layer 0 K, layer 0 V, layer 1 K, ...
std::vector<float> SeededCache(uint64_t seed, const InferShape& shape, int layer, bool value,
                               DType dt);
uint64_t CacheOffset(const InferShape& shape, int layer, bool value);  // its start in that stream

}  // namespace dlb

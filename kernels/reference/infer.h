// Naive float64 pieces of the Llama-style decoder of kernels/common/infer.h and a whole step from
// them: the yardstick the inference ops (kernels/onednn/infer.h, the GPU's) are verified against.
// Row-major throughout; a matrix weight is out x in (y = x W^T).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/common/infer.h"

namespace dlb {

using Vec = std::vector<double>;

// y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w, for `rows` rows of w.size() values.
Vec RefRmsNorm(const Vec& x, const Vec& w, double eps);

// Rotary embeddings in place on rows of `heads` x head_dim values, row r at position pos[r]:
// the pair (i, i + head_dim/2) of each head rotated by pos * theta^(-2i / head_dim).
void RefRope(Vec* x, const std::vector<int64_t>& pos, int64_t heads, int64_t head_dim,
             double theta);

// y = x W^T: x is rows x in, w out x in.
Vec RefLinear(const Vec& x, const Vec& w, int64_t in, int64_t out);

// (silu(x W1^T) * (x W3^T)) W2^T: x is rows x dim, w1 and w3 ffn x dim, w2 dim x ffn.
Vec RefSwiGlu(const Vec& x, const Vec& w1, const Vec& w3, const Vec& w2, int64_t dim, int64_t ffn);

// Grouped-query attention of one sequence: q is tokens x heads x head_dim, query row t at position
// pos[t] sees the keys at positions 0..pos[t] (causal); k and v are kv_heads x keys x head_dim
// with keys > every pos. Returns tokens x heads x head_dim.
Vec RefGqaAttention(const Vec& q, const std::vector<int64_t>& pos, const Vec& k, const Vec& v,
                    int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t keys);

// The weights and cache of a step, in double (from kernels/common/infer.h's seeded values).
struct RefLlama {
  struct Layer {
    Vec attn_norm, wq, wk, wv, wo, ffn_norm, w1, w3, w2;
  };
  std::vector<Layer> layers;
  Vec embed, final_norm, lm_head;
};
// The seeded model in dtype dt (the values an op in that dtype holds).
RefLlama SeededRefLlama(const LlamaConfig& m, uint64_t seed, DType dt);
// The same with the layers' matrices and the LM head in matrices_dt and the embedding and norms in
// rest_dt: fp8 weights beside a bf16 embedding and norms, as the GPU step holds them.
RefLlama SeededRefLlama(const LlamaConfig& m, uint64_t seed, DType matrices_dt, DType rest_dt);

// The cache of one layer: per sequence, kv_heads x positions x head_dim for K and for V.
struct RefCache {
  std::vector<Vec> k, v;  // [layer][batch x kv_heads x capacity x head_dim]
  int64_t capacity = 0;
};
// The cache a step starts from: decode, the seeded prefix of kernels/common/infer.h in cache_dt
// (capacity ctx + 1); prefill, empty (capacity ctx).
RefCache SeededRefCache(const InferShape& s, uint64_t seed, DType cache_dt);

// One step of the decoder (kernels/common/infer.h), appending to the cache: the logits of each
// sequence's last new token, batch x vocab.
Vec RefInferStep(const InferShape& s, const RefLlama& w, const std::vector<int64_t>& tokens,
                 RefCache* cache);

}  // namespace dlb

// Small CUDA kernels of the GPU inference step (kernels/cublas/infer.h): everything between its
// cuBLASLt GEMMs. bf16 tensors are passed as their raw 16-bit storage. Each launcher checks its
// sizes and its launch; none synchronizes, so the whole step can be captured in a CUDA graph.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace dlb::cuda {

// x[t] = embed[tokens[t]] as f32: rows of d, the embedding vocab x d bf16.
void EmbedRows(const int32_t* tokens, const uint16_t* embed, int64_t rows, int64_t d, float* x,
               cudaStream_t stream);

// out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w in bf16: `rows` rows of d read `stride` floats
// apart, written d apart. One block a row, the sum of squares in f32.
void RmsNormBf16(const float* x, int64_t rows, int64_t stride, int64_t d, const float* w, float eps,
                 uint16_t* out, cudaStream_t stream);

// The attention's sizes: `batch` sequences of `new_tokens` queries each, token i at position
// first_pos + i and seeing the keys 0..first_pos + i (causal); K and V caches batch x kv_heads x
// capacity x head_dim.
struct InferAttnDims {
  int64_t batch = 0, new_tokens = 0, first_pos = 0, heads = 0, kv_heads = 0, head_dim = 0,
          capacity = 0;
};

// Rotary embeddings and the cache append, from the fused projection's f32 rows (q heads, k heads,
// v heads, batch x new_tokens rows): q (rows x heads x head_dim, bf16) rotated, k rotated and v
// copied into the caches at each token's position. cos and sin: new_tokens x head_dim / 2.
void RopeAppend(const float* qkv, const float* cos, const float* sin, const InferAttnDims& a,
                uint16_t* q, uint16_t* k_cache, uint16_t* v_cache, cudaStream_t stream);

// The head_dims GqaAttention takes: 8 x a power of two up to 256 (a key row is head_dim / 8
// lanes' 16-byte loads, a power of two so that lanes pair up by xor within a warp).
inline constexpr int64_t kInferMaxHeadDim = 256;
inline constexpr bool InferHeadDimOk(int64_t head_dim) {
  return head_dim >= 8 && head_dim <= kInferMaxHeadDim && head_dim % 8 == 0 &&
         ((head_dim / 8) & (head_dim / 8 - 1)) == 0;
}
// How GqaAttention splits the keys: `splits` blocks of `chunk` keys per (token, kv head), chosen
// so that a decode step at batch 1 still fills the GPU (flash-decoding).
struct AttnSplit {
  int64_t splits = 1, chunk = 1;
};
AttnSplit ChooseSplit(const InferAttnDims& a);
// Floats of the partial results GqaAttention needs: rows x heads x splits x (head_dim + 2).
size_t AttnPartialFloats(const InferAttnDims& a, const AttnSplit& split);
// Grouped-query attention, scale 1/sqrt(head_dim): q rows x heads x head_dim (bf16), query head h
// reading kv head h / (heads / kv_heads); out the same layout (bf16). Each block takes one token's
// query heads of one kv head (up to 8 of them; a larger group over several blocks) over one chunk
// of keys, reading each K and V row of the chunk once for all those heads (16-byte loads, bf16 to
// f32, an online softmax in f32) into `partial`; a second kernel merges the chunks. The caches
// must be 16-byte aligned.
void GqaAttention(const uint16_t* q, const uint16_t* k_cache, const uint16_t* v_cache,
                  const InferAttnDims& a, const AttnSplit& split, float* partial, uint16_t* out,
                  cudaStream_t stream);

// act[t][f] = silu(gu[t][f]) * gu[t][ffn + f] in bf16: gu rows x 2 ffn (gate, then up) in f32.
void SwiGluBf16(const float* gu, int64_t rows, int64_t ffn, uint16_t* act, cudaStream_t stream);

// fp8 e4m3 activations with a per-tensor scale of this call's data: amax = max |x| (an absmax
// reduction into *amax_bits, zeroed first), *scale = amax / 448 (1 when every x is 0), and
// out = e4m3(x / *scale), saturating; n bf16 values in. *scale is what a GEMM multiplies the e4m3
// values by (cuBLASLt's B scale). Every step is enqueued on `stream`, none synchronizes.
void QuantizeFp8(const uint16_t* x, int64_t n, uint32_t* amax_bits, float* scale, uint8_t* out,
                 cudaStream_t stream);

// x *= scale in place, n bf16 values: exact for a power of two (kernels/common/infer.h's weight
// scale).
void ScaleBf16(uint16_t* x, size_t n, float scale, cudaStream_t stream);

}  // namespace dlb::cuda

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

// EmbedRows, and the first norm's fused input (kernels/cuda/gemv.h's GemvFusion): next_in[t] =
// bf16(x[t] * gamma) and ss[t] = the sum of x[t]'s squares (one piece a row). One block a row.
void EmbedNormInput(const int32_t* tokens, const uint16_t* embed, int64_t rows, int64_t d,
                    const float* gamma, float* x, uint16_t* next_in, float* ss,
                    cudaStream_t stream);

// out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w in bf16: `rows` rows of d read `stride` floats
// apart, written d apart. One block a row, the sum of squares in f32.
void RmsNormBf16(const float* x, int64_t rows, int64_t stride, int64_t d, const float* w, float eps,
                 uint16_t* out, cudaStream_t stream);

// The attention's sizes: `batch` sequences of `new_tokens` queries each, token i at position
// first_pos + i and seeing the keys 0..first_pos + i (causal). The K and V caches: contiguous,
// batch x kv_heads x capacity x head_dim (page 0); or paged, pools of pages of `page` positions,
// each page kv_heads x page x head_dim, sequence b's position j in page
// page_table[b * pages_per_seq + j / page] at row j % page (a device array; page a multiple of
// kInferPageAlign, pages_per_seq x page at least the capacity).
struct InferAttnDims {
  int64_t batch = 0, new_tokens = 0, first_pos = 0, heads = 0, kv_heads = 0, head_dim = 0,
          capacity = 0;
  int64_t page = 0, pages_per_seq = 0;
  const int32_t* page_table = nullptr;
};
// A paged cache's page holds a multiple of this many positions (the attention kernel's key tile).
inline constexpr int64_t kInferPageAlign = 32;

// Copies positions 0..positions-1 of a contiguous batch x kv_heads x capacity x head_dim cache
// (src) into the paged cache `a` describes (pool): how a paged step's seeded prefix is placed.
void CopyToPages(const uint16_t* src, int64_t positions, const InferAttnDims& a, uint16_t* pool,
                 cudaStream_t stream);

// Rotary embeddings and the cache append, from the fused projection's f32 rows (q heads, k heads,
// v heads, batch x new_tokens rows): q (rows x heads x head_dim, bf16) rotated, k rotated and v
// copied into the caches at each token's position. cos and sin: new_tokens x head_dim / 2.
void RopeAppend(const float* qkv, const float* cos, const float* sin, const InferAttnDims& a,
                uint16_t* q, uint16_t* k_cache, uint16_t* v_cache, cudaStream_t stream);
// The same from bf16 q, k and v (a GEMM that writes bf16); v is copied as it is.
void RopeAppend(const uint16_t* qkv, const float* cos, const float* sin, const InferAttnDims& a,
                uint16_t* q, uint16_t* k_cache, uint16_t* v_cache, cudaStream_t stream);

// The head_dims GqaAttention takes: 16 x a power of two up to 256 (the tensor cores' steps of 16
// along the head dimension, and ldmatrix's 16-wide blocks of V).
inline constexpr int64_t kInferMaxHeadDim = 256;
inline constexpr bool InferHeadDimOk(int64_t head_dim) {
  return head_dim >= 16 && head_dim <= kInferMaxHeadDim && head_dim % 16 == 0 &&
         ((head_dim / 16) & (head_dim / 16 - 1)) == 0;
}
// How GqaAttention splits the keys: `splits` blocks of `chunk` keys (a multiple of 32, the key
// tile) per (token, kv head): chunks of 512 keys where that gives the GPU enough blocks and not
// too many, smaller ones at batch 1 (flash-decoding), none when the rows alone fill the GPU; at
// most kInferMaxSplits.
inline constexpr int64_t kInferMaxSplits = 256;
struct AttnSplit {
  int64_t splits = 1, chunk = 1;
};
AttnSplit ChooseSplit(const InferAttnDims& a);
// Floats of the scratch GqaAttention needs: the chunks' partial results, rows x heads x splits x
// (head_dim + 2), then one counter a block row. The counters must be zero before the first call
// (ClearAttnScratch); every call leaves them zero, so a captured step can be replayed.
size_t AttnPartialFloats(const InferAttnDims& a, const AttnSplit& split);
void ClearAttnScratch(float* partial, const InferAttnDims& a, const AttnSplit& split,
                      cudaStream_t stream);
// Grouped-query attention, scale 1/sqrt(head_dim): q rows x heads x head_dim (bf16), query head h
// reading kv head h / (heads / kv_heads); out the same layout (bf16). Each block takes one token's
// query heads of one kv head (up to 8 of them; a larger group over several blocks) over one chunk
// of keys. Its warps take tiles of 32 keys, copied to shared memory asynchronously: the scores
// Q K^T and the weighted sum P V are tensor-core products (bf16 in, f32 accumulation; the heads
// are the rows of a 16-row tile), the online softmax runs on the scores in f32. With several
// chunks, each block
// writes its partial result and the last block of its row to finish merges them (a counter a row
// in the scratch), so the step is one launch. The caches must be 16-byte aligned.
void GqaAttention(const uint16_t* q, const uint16_t* k_cache, const uint16_t* v_cache,
                  const InferAttnDims& a, const AttnSplit& split, float* partial, uint16_t* out,
                  cudaStream_t stream);

// The decode step's rotary append and attention in one launch, for one token a sequence
// (a.new_tokens 1) from the fused projection's f32 rows: what RopeAppend then GqaAttention do,
// with the same rounding (q, k and v to bf16 after the rotation in f32), the caches written at
// position first_pos and the output in GqaAttention's layout. Blocks as GqaAttention's with 8
// warps (4 at head_dim 256) over chunks of the cached keys (positions before first_pos; at most 8
// chunks, ChooseRopeAttnSplit), this step's key added by each row's last block; a row's chunks are
// one thread-block cluster that merges them in distributed shared memory, so there is no scratch
// and no second pass. The cached keys' tiles come in by bulk copies (the TMA unit). A programmatic
// dependent launch: each warp starts the copy of its first tile of cached keys, which no kernel of
// a step writes, before waiting on the kernel before it, and reads cos and sin then too (no kernel
// of a step may write them); the next kernel may launch as this one starts. Needs compute
// capability 9.0+ (RopeAttentionSupported); the caches 16-byte aligned. `carveout` as Gemv's
// (kernels/cuda/gemv.h): the launch asks for that percent of each multiprocessor's on-chip memory
// as shared memory, -1 leaves it to the driver; at least RopeAttentionCarveout(a), or a
// dlb::Error.
AttnSplit ChooseRopeAttnSplit(const InferAttnDims& a);
bool RopeAttentionSupported();
void RopeAttention(const float* qkv, const float* cos, const float* sin, const InferAttnDims& a,
                   const AttnSplit& split, uint16_t* k_cache, uint16_t* v_cache, uint16_t* out,
                   cudaStream_t stream, int carveout = -1);
// The carveout (percent) of the smallest shared-memory split of the current device that holds
// one of RopeAttention's blocks (its tiles and state, and the 1 KB the system keeps a block): 72
// at head_dim 128 on an H100 or H200 (164 KB of 228 for a block of 140 KB).
int RopeAttentionCarveout(const InferAttnDims& a);

// act[t][f] = silu(gu[t][2f]) * gu[t][2f + 1] in bf16: gu rows x 2 ffn in f32, each unit's gate
// and up side by side (the fused gate/up weight's rows interleaved, as GemvFusion's SwiGLU reads
// them).
void SwiGluBf16(const float* gu, int64_t rows, int64_t ffn, uint16_t* act, cudaStream_t stream);
// The same from bf16 gate and up (a GEMM that writes bf16: half the bytes written and read back).
void SwiGluBf16(const uint16_t* gu, int64_t rows, int64_t ffn, uint16_t* act, cudaStream_t stream);

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

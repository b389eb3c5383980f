// What the inference step's CUDA kernels (infer_kernels.cu) and its decode attention
// (infer_attn.cu) share: checks, bf16 views of raw storage, a warp's sum and the cache's row
// addressing. Internal to kernels/cuda.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>
#include <string>

#include "kernels/common/error.h"
#include "kernels/cuda/infer_kernels.h"

namespace dlb::cuda::infer_detail {

using bf16 = __nv_bfloat16;

inline void Require(bool ok, const char* what) {
  if (!ok) throw Error(std::string("inference kernels: ") + what);
}

inline const bf16* B(const uint16_t* p) { return reinterpret_cast<const bf16*>(p); }
inline bf16* B(uint16_t* p) { return reinterpret_cast<bf16*>(p); }

__device__ __forceinline__ float WarpSum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sequence b's cached row j of kv head g, contiguous or paged (InferAttnDims).
__device__ __forceinline__ int64_t KvRow(const InferAttnDims& a, int64_t b, int64_t g, int64_t j) {
  if (a.page == 0) return ((b * a.kv_heads + g) * a.capacity + j) * a.head_dim;
  const int64_t page = a.page_table[b * a.pages_per_seq + j / a.page];
  return ((page * a.kv_heads + g) * a.page + j % a.page) * a.head_dim;
}

inline void CheckDims(const InferAttnDims& a) {
  Require(a.batch > 0 && a.new_tokens > 0 && a.first_pos >= 0 && a.heads > 0 && a.kv_heads > 0 &&
              a.heads % a.kv_heads == 0 && InferHeadDimOk(a.head_dim) &&
              a.capacity >= a.first_pos + a.new_tokens &&
              (a.page == 0 || (a.page > 0 && a.page % kInferPageAlign == 0 &&
                               a.page_table != nullptr && a.pages_per_seq * a.page >= a.capacity)),
          "attention sizes must be positive, heads a multiple of kv_heads, head_dim 16, 32, 64, "
          "128 or 256, the capacity at least every position; a paged cache's page a "
          "multiple of 32 positions, its table covering the capacity");
}

}  // namespace dlb::cuda::infer_detail

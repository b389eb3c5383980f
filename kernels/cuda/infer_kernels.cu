#include <cuda_bf16.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>

#include "kernels/common/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/infer_kernels.h"

namespace dlb::cuda {

namespace {

using bf16 = __nv_bfloat16;

constexpr int kThreads = 256;
// Grid-stride loops take at most this many blocks; the loops cover the rest.
constexpr int64_t kMaxBlocks = 65536;
// Attention: warps per block, and the head_dim pairs one lane holds.
constexpr int kAttnWarps = 4;
constexpr int kPairsPerLane = int(kInferMaxHeadDim / 64);
// Key-splitting: aim for this many blocks per attention launch, with chunks of at least this many
// keys (fewer and the merge costs more than it spreads).
constexpr int64_t kTargetBlocks = 4096;
constexpr int64_t kMinChunk = 64;

unsigned Blocks(int64_t n) {
  return static_cast<unsigned>(
      std::max<int64_t>(1, std::min(kMaxBlocks, (n + kThreads - 1) / kThreads)));
}

void Require(bool ok, const char* what) {
  if (!ok) throw Error(std::string("inference kernels: ") + what);
}

const bf16* B(const uint16_t* p) { return reinterpret_cast<const bf16*>(p); }
bf16* B(uint16_t* p) { return reinterpret_cast<bf16*>(p); }

__device__ float WarpSum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void EmbedKernel(const int32_t* tokens, const bf16* embed, int64_t n, int64_t d,
                            float* x) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    x[i] = __bfloat162float(embed[int64_t(tokens[i / d]) * d + i % d]);
}

__global__ void RmsNormKernel(const float* x, int64_t stride, int64_t d, const float* w, float eps,
                              bf16* out) {
  __shared__ float warp_sums[kThreads / 32];
  const float* row = x + int64_t(blockIdx.x) * stride;
  float ss = 0;
  for (int64_t i = threadIdx.x; i < d; i += kThreads) ss += row[i] * row[i];
  ss = WarpSum(ss);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = ss;
  __syncthreads();
  float total = 0;
  for (int i = 0; i < kThreads / 32; ++i) total += warp_sums[i];
  const float inv = rsqrtf(total / float(d) + eps);
  bf16* o = out + int64_t(blockIdx.x) * d;
  for (int64_t i = threadIdx.x; i < d; i += kThreads) o[i] = __float2bfloat16(row[i] * inv * w[i]);
}

__global__ void RopeAppendKernel(const float* qkv, const float* cos, const float* sin,
                                 InferAttnDims a, int64_t n, bf16* q, bf16* kc, bf16* vc) {
  const int64_t D = a.head_dim, half = D / 2, H = a.heads, G = a.kv_heads, qd = H * D, kvd = G * D,
                width = qd + 2 * kvd;
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t j = i % half, head = i / half % (H + G), t = i / (half * (H + G));
    const int64_t b = t / a.new_tokens, tok = t % a.new_tokens, pos = a.first_pos + tok;
    const float c = cos[tok * half + j], s = sin[tok * half + j];
    const float* row = qkv + t * width;
    if (head < H) {
      const float x0 = row[head * D + j], x1 = row[head * D + j + half];
      bf16* dst = q + (t * H + head) * D;
      dst[j] = __float2bfloat16(x0 * c - x1 * s);
      dst[j + half] = __float2bfloat16(x1 * c + x0 * s);
    } else {
      const int64_t g = head - H, at = ((b * G + g) * a.capacity + pos) * D;
      const float* k = row + qd + g * D;
      const float* v = row + qd + kvd + g * D;
      kc[at + j] = __float2bfloat16(k[j] * c - k[j + half] * s);
      kc[at + j + half] = __float2bfloat16(k[j + half] * c + k[j] * s);
      vc[at + j] = __float2bfloat16(v[j]);
      vc[at + j + half] = __float2bfloat16(v[j + half]);
    }
  }
}

// Block (row x head, split): kAttnWarps warps take the chunk's keys in turn, each keeping a running
// max, sum and weighted V; the warps' states then merge into
// partial[(row * heads + head) * splits + split] = {max, sum, acc[head_dim]}. A chunk past the
// row's last key writes {-inf, 0, 0...}, which the merge skips.
__global__ void AttnChunkKernel(const bf16* q, const bf16* kc, const bf16* vc, InferAttnDims a,
                                int64_t chunk, float scale, float* partial) {
  __shared__ float sq[kInferMaxHeadDim];
  __shared__ float sm[kAttnWarps], sl[kAttnWarps];
  __shared__ float sacc[kAttnWarps][kInferMaxHeadDim];
  const int64_t D = a.head_dim, rh = blockIdx.x, t = rh / a.heads, h = rh % a.heads;
  const int64_t b = t / a.new_tokens, keys = a.first_pos + t % a.new_tokens + 1;
  const int64_t g = h / (a.heads / a.kv_heads);
  const int64_t k0 = int64_t(blockIdx.y) * chunk, k1 = min(k0 + chunk, keys);
  for (int64_t e = threadIdx.x; e < D; e += blockDim.x) sq[e] = __bfloat162float(q[rh * D + e]);
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const bf16* kb = kc + (b * a.kv_heads + g) * a.capacity * D;
  const bf16* vb = vc + (b * a.kv_heads + g) * a.capacity * D;
  // Lane l holds the pairs (2l, 2l + 1) + 64 c: a warp reads 128 contiguous bytes a load.
  float m = -INFINITY, l = 0, acc[kPairsPerLane][2];
  for (int c = 0; c < kPairsPerLane; ++c) acc[c][0] = acc[c][1] = 0;
  for (int64_t j = k0 + warp; j < k1; j += kAttnWarps) {
    float dot = 0;
#pragma unroll
    for (int c = 0; c < kPairsPerLane; ++c) {
      const int64_t e = 2 * lane + 64 * c;
      if (e < D) {
        const float2 k2 =
            __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(kb + j * D + e));
        dot += sq[e] * k2.x + sq[e + 1] * k2.y;
      }
    }
    const float s = WarpSum(dot) * scale;
    const float nm = fmaxf(m, s);
    const float corr = expf(m - nm), p = expf(s - nm);  // m = -inf at first: corr 0
    l = l * corr + p;
#pragma unroll
    for (int c = 0; c < kPairsPerLane; ++c) {
      const int64_t e = 2 * lane + 64 * c;
      if (e < D) {
        const float2 v2 =
            __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(vb + j * D + e));
        acc[c][0] = acc[c][0] * corr + p * v2.x;
        acc[c][1] = acc[c][1] * corr + p * v2.y;
      }
    }
    m = nm;
  }
  if (lane == 0) {
    sm[warp] = m;
    sl[warp] = l;
  }
#pragma unroll
  for (int c = 0; c < kPairsPerLane; ++c) {
    const int64_t e = 2 * lane + 64 * c;
    if (e < D) {
      sacc[warp][e] = acc[c][0];
      sacc[warp][e + 1] = acc[c][1];
    }
  }
  __syncthreads();
  float mx = -INFINITY;
  for (int w = 0; w < kAttnWarps; ++w) mx = fmaxf(mx, sm[w]);
  float f[kAttnWarps], sum = 0;
  for (int w = 0; w < kAttnWarps; ++w) {
    f[w] = sm[w] == -INFINITY ? 0.f : expf(sm[w] - mx);  // a warp that saw no key weighs nothing
    sum += f[w] * sl[w];
  }
  float* out = partial + (rh * gridDim.y + blockIdx.y) * (D + 2);
  if (threadIdx.x == 0) {
    out[0] = mx;
    out[1] = sum;
  }
  for (int64_t e = threadIdx.x; e < D; e += blockDim.x) {
    float v = 0;
    for (int w = 0; w < kAttnWarps; ++w) v += f[w] * sacc[w][e];
    out[2 + e] = v;
  }
}

// Block row x head: the chunks' states merged; chunk 0 always holds key 0, so the max is finite.
__global__ void AttnMergeKernel(const float* partial, int64_t splits, int64_t D, bf16* out) {
  const int64_t rh = blockIdx.x;
  const float* p = partial + rh * splits * (D + 2);
  float mx = -INFINITY;
  for (int64_t s = 0; s < splits; ++s) mx = fmaxf(mx, p[s * (D + 2)]);
  float sum = 0;
  for (int64_t s = 0; s < splits; ++s) {
    const float m = p[s * (D + 2)];
    if (m != -INFINITY) sum += expf(m - mx) * p[s * (D + 2) + 1];
  }
  for (int64_t e = threadIdx.x; e < D; e += blockDim.x) {
    float v = 0;
    for (int64_t s = 0; s < splits; ++s) {
      const float m = p[s * (D + 2)];
      if (m != -INFINITY) v += expf(m - mx) * p[s * (D + 2) + 2 + e];
    }
    out[rh * D + e] = __float2bfloat16(v / sum);
  }
}

__global__ void SwiGluKernel(const float* gu, int64_t n, int64_t ffn, bf16* act) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t t = i / ffn, f = i % ffn;
    const float g = gu[t * 2 * ffn + f], u = gu[t * 2 * ffn + ffn + f];
    act[i] = __float2bfloat16(g / (1.f + expf(-g)) * u);
  }
}

__global__ void ScaleKernel(bf16* x, int64_t n, float scale) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    x[i] = __float2bfloat16(__bfloat162float(x[i]) * scale);
}

void CheckDims(const InferAttnDims& a) {
  Require(a.batch > 0 && a.new_tokens > 0 && a.first_pos >= 0 && a.heads > 0 && a.kv_heads > 0 &&
              a.heads % a.kv_heads == 0 && a.head_dim > 0 && a.head_dim % 2 == 0 &&
              a.head_dim <= kInferMaxHeadDim && a.capacity >= a.first_pos + a.new_tokens,
          "attention sizes must be positive, heads a multiple of kv_heads, head_dim even and at "
          "most 256, the capacity at least every position");
}

}  // namespace

void EmbedRows(const int32_t* tokens, const uint16_t* embed, int64_t rows, int64_t d, float* x,
               cudaStream_t stream) {
  Require(rows > 0 && d > 0, "embedding rows and width must be positive");
  EmbedKernel<<<Blocks(rows * d), kThreads, 0, stream>>>(tokens, B(embed), rows * d, d, x);
  DLB_CHECK(cudaGetLastError());
}

void RmsNormBf16(const float* x, int64_t rows, int64_t stride, int64_t d, const float* w, float eps,
                 uint16_t* out, cudaStream_t stream) {
  Require(rows > 0 && rows <= INT_MAX && d > 0 && stride >= d,
          "RMSNorm rows must be positive (at most 2^31 - 1), the stride at least the width");
  RmsNormKernel<<<unsigned(rows), kThreads, 0, stream>>>(x, stride, d, w, eps, B(out));
  DLB_CHECK(cudaGetLastError());
}

void RopeAppend(const float* qkv, const float* cos, const float* sin, const InferAttnDims& a,
                uint16_t* q, uint16_t* k_cache, uint16_t* v_cache, cudaStream_t stream) {
  CheckDims(a);
  const int64_t n = a.batch * a.new_tokens * (a.heads + a.kv_heads) * (a.head_dim / 2);
  RopeAppendKernel<<<Blocks(n), kThreads, 0, stream>>>(qkv, cos, sin, a, n, B(q), B(k_cache),
                                                       B(v_cache));
  DLB_CHECK(cudaGetLastError());
}

AttnSplit ChooseSplit(const InferAttnDims& a) {
  CheckDims(a);
  const int64_t rows = a.batch * a.new_tokens * a.heads;
  const int64_t keys = a.first_pos + a.new_tokens;
  int64_t splits = std::max<int64_t>(
      1, std::min((kTargetBlocks + rows - 1) / rows, (keys + kMinChunk - 1) / kMinChunk));
  AttnSplit out;
  out.chunk = (keys + splits - 1) / splits;
  out.splits = (keys + out.chunk - 1) / out.chunk;  // no chunk left empty for every row
  return out;
}

size_t AttnPartialFloats(const InferAttnDims& a, const AttnSplit& split) {
  return size_t(a.batch * a.new_tokens * a.heads) * size_t(split.splits) * size_t(a.head_dim + 2);
}

void GqaAttention(const uint16_t* q, const uint16_t* k_cache, const uint16_t* v_cache,
                  const InferAttnDims& a, const AttnSplit& split, float* partial, uint16_t* out,
                  cudaStream_t stream) {
  CheckDims(a);
  const int64_t rows = a.batch * a.new_tokens * a.heads;
  Require(rows <= INT_MAX && split.splits > 0 && split.splits <= 65535 && split.chunk > 0 &&
              split.splits * split.chunk >= a.first_pos + a.new_tokens,
          "attention grid: rows x heads at most 2^31 - 1, 1..65535 splits covering every key");
  const float scale = float(1.0 / std::sqrt(double(a.head_dim)));
  AttnChunkKernel<<<dim3(unsigned(rows), unsigned(split.splits)), kAttnWarps * 32, 0, stream>>>(
      B(q), B(k_cache), B(v_cache), a, split.chunk, scale, partial);
  DLB_CHECK(cudaGetLastError());
  AttnMergeKernel<<<unsigned(rows), 128, 0, stream>>>(partial, split.splits, a.head_dim, B(out));
  DLB_CHECK(cudaGetLastError());
}

void SwiGluBf16(const float* gu, int64_t rows, int64_t ffn, uint16_t* act, cudaStream_t stream) {
  Require(rows > 0 && ffn > 0, "SwiGLU rows and width must be positive");
  SwiGluKernel<<<Blocks(rows * ffn), kThreads, 0, stream>>>(gu, rows * ffn, ffn, B(act));
  DLB_CHECK(cudaGetLastError());
}

void ScaleBf16(uint16_t* x, size_t n, float scale, cudaStream_t stream) {
  if (n == 0) return;
  ScaleKernel<<<Blocks(int64_t(n)), kThreads, 0, stream>>>(B(x), int64_t(n), scale);
  DLB_CHECK(cudaGetLastError());
}

}  // namespace dlb::cuda

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/common/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/infer_kernels.cuh"
#include "kernels/cuda/infer_kernels.h"

namespace dlb::cuda {

using namespace infer_detail;  // NOLINT: this file's shared helpers

namespace {

constexpr int kThreads = 256;
// Grid-stride loops take at most this many blocks; the loops cover the rest.
constexpr int64_t kMaxBlocks = 65536;

unsigned Blocks(int64_t n) {
  return static_cast<unsigned>(
      std::max<int64_t>(1, std::min(kMaxBlocks, (n + kThreads - 1) / kThreads)));
}

__global__ void EmbedKernel(const int32_t* tokens, const bf16* embed, int64_t n, int64_t d,
                            float* x) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    x[i] = __bfloat162float(embed[int64_t(tokens[i / d]) * d + i % d]);
}

// A block's sum of v over its threads (blockDim.x a multiple of 32, at most 1024), in every thread.
__device__ float BlockSum(float v, float* scratch) {
  v = WarpSum(v);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0;
  for (int i = 0; i < int(blockDim.x / 32); ++i) total += scratch[i];
  __syncthreads();
  return total;
}

// One block a row. Where the width and pointers allow it, a thread's 16-byte words of the row (8
// bf16) and of gamma are all asked for before any is used: at one token a step the kernel is a
// single block, bound by the latency of its reads (13.4 us a Llama-3-8B step on an H200 when each
// 2-byte read waited for the one before). It lets the next kernel (the first layer's qkv product, a
// programmatic dependent launch) start loading its weights as it starts.
constexpr int kEmbedVecs = 4;  // words a thread a pass: a row of up to 8192 in one pass
__global__ void EmbedNormKernel(const int32_t* __restrict__ tokens, const bf16* __restrict__ embed,
                                int64_t d, const float* __restrict__ gamma, float* __restrict__ x,
                                bf16* __restrict__ next_in, float* __restrict__ ss, bool vec) {
  __shared__ float scratch[kThreads / 32];
  LetDependentsStart();
  const int64_t r = blockIdx.x;
  const bf16* src = embed + int64_t(tokens[r]) * d;
  float sum = 0.f;
  if (vec) {
    const int64_t words = d / 8;
    const uint4* src4 = reinterpret_cast<const uint4*>(src);
    const float4* g4 = reinterpret_cast<const float4*>(gamma);
    for (int64_t base = threadIdx.x; base < words; base += int64_t(kThreads) * kEmbedVecs) {
      uint4 w[kEmbedVecs];
      float4 g[kEmbedVecs][2];
#pragma unroll
      for (int u = 0; u < kEmbedVecs; ++u) {
        const int64_t i = base + int64_t(u) * kThreads;
        if (i < words) {
          w[u] = src4[i];
          g[u][0] = g4[2 * i];
          g[u][1] = g4[2 * i + 1];
        }
      }
#pragma unroll
      for (int u = 0; u < kEmbedVecs; ++u) {
        const int64_t i = base + int64_t(u) * kThreads;
        if (i >= words) break;
        const unsigned wv[4] = {w[u].x, w[u].y, w[u].z, w[u].w};
        const float gv[8] = {g[u][0].x, g[u][0].y, g[u][0].z, g[u][0].w,
                             g[u][1].x, g[u][1].y, g[u][1].z, g[u][1].w};
        float v[8];
        unsigned packed[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          v[2 * e] = __uint_as_float(wv[e] << 16);  // a bf16 is the top half of a float
          v[2 * e + 1] = __uint_as_float(wv[e] & 0xffff0000u);
          const __nv_bfloat162 n =
              __floats2bfloat162_rn(v[2 * e] * gv[2 * e], v[2 * e + 1] * gv[2 * e + 1]);
          packed[e] = *reinterpret_cast<const unsigned*>(&n);
          sum += v[2 * e] * v[2 * e] + v[2 * e + 1] * v[2 * e + 1];
        }
        float4* x4 = reinterpret_cast<float4*>(x + r * d) + 2 * i;
        x4[0] = make_float4(v[0], v[1], v[2], v[3]);
        x4[1] = make_float4(v[4], v[5], v[6], v[7]);
        reinterpret_cast<uint4*>(next_in + r * d)[i] =
            make_uint4(packed[0], packed[1], packed[2], packed[3]);
      }
    }
  } else {
    for (int64_t j = threadIdx.x; j < d; j += kThreads) {
      const float v = __bfloat162float(src[j]);
      x[r * d + j] = v;
      next_in[r * d + j] = __float2bfloat16(v * gamma[j]);
      sum += v * v;
    }
  }
  sum = BlockSum(sum, scratch);
  if (threadIdx.x == 0) ss[r] = sum;
}

// One block a row. Rows whose width, stride and pointers allow it are read 16 bytes at a time,
// several loads in flight per thread: at one token a step the norm is a single block, bound by the
// latency of its reads rather than their bytes.
__global__ void RmsNormKernel(const float* x, int64_t stride, int64_t d, const float* w, float eps,
                              bf16* out, bool vec) {
  __shared__ float scratch[kThreads / 32];
  const float* row = x + int64_t(blockIdx.x) * stride;
  bf16* o = out + int64_t(blockIdx.x) * d;
  float ss = 0;
  if (vec) {
    const float4* r4 = reinterpret_cast<const float4*>(row);
#pragma unroll 4
    for (int64_t i = threadIdx.x; i < d / 4; i += kThreads) {
      const float4 v = r4[i];
      ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
  } else {
#pragma unroll 4
    for (int64_t i = threadIdx.x; i < d; i += kThreads) ss += row[i] * row[i];
  }
  const float inv = rsqrtf(BlockSum(ss, scratch) / float(d) + eps);
  if (vec) {
    const float4* r4 = reinterpret_cast<const float4*>(row);
    const float4* w4 = reinterpret_cast<const float4*>(w);
    __nv_bfloat162* o2 = reinterpret_cast<__nv_bfloat162*>(o);
#pragma unroll 4
    for (int64_t i = threadIdx.x; i < d / 4; i += kThreads) {
      const float4 v = r4[i], g = w4[i];
      o2[2 * i] = __floats2bfloat162_rn(v.x * inv * g.x, v.y * inv * g.y);
      o2[2 * i + 1] = __floats2bfloat162_rn(v.z * inv * g.z, v.w * inv * g.w);
    }
  } else {
    for (int64_t i = threadIdx.x; i < d; i += kThreads)
      o[i] = __float2bfloat16(row[i] * inv * w[i]);
  }
}

// RmsNormKernel's rows that fit its threads' registers: up to kNormVecs float4 a thread. The row
// and its weights are read once, every load issued before the sum waits on any (at one token a
// step the norm is a handful of blocks, bound by the latency of its reads).
constexpr int kNormVecs = 8;
__global__ void RmsNormCachedKernel(const float* x, int64_t stride, int64_t d, const float* w,
                                    float eps, bf16* out) {
  __shared__ float scratch[kThreads / 32];
  const float4* r4 = reinterpret_cast<const float4*>(x + int64_t(blockIdx.x) * stride);
  const float4* w4 = reinterpret_cast<const float4*>(w);
  const int n4 = int(d / 4);
  float4 v[kNormVecs], g[kNormVecs];
  float ss = 0;
#pragma unroll
  for (int k = 0; k < kNormVecs; ++k) {
    const int i = int(threadIdx.x) + k * kThreads;
    if (i < n4) {
      v[k] = r4[i];
      g[k] = w4[i];
    }
  }
#pragma unroll
  for (int k = 0; k < kNormVecs; ++k)
    if (int(threadIdx.x) + k * kThreads < n4)
      ss += v[k].x * v[k].x + v[k].y * v[k].y + v[k].z * v[k].z + v[k].w * v[k].w;
  const float inv = rsqrtf(BlockSum(ss, scratch) / float(d) + eps);
  __nv_bfloat162* o2 = reinterpret_cast<__nv_bfloat162*>(out + int64_t(blockIdx.x) * d);
#pragma unroll
  for (int k = 0; k < kNormVecs; ++k) {
    const int i = int(threadIdx.x) + k * kThreads;
    if (i < n4) {
      o2[2 * i] = __floats2bfloat162_rn(v[k].x * inv * g[k].x, v[k].y * inv * g[k].y);
      o2[2 * i + 1] = __floats2bfloat162_rn(v[k].z * inv * g[k].z, v[k].w * inv * g[k].w);
    }
  }
}

__global__ void CopyToPagesKernel(const bf16* src, int64_t positions, InferAttnDims a, int64_t n,
                                  bf16* pool) {
  const int64_t D = a.head_dim, step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t e = i % D, j = i / D % positions, bg = i / (D * positions);
    pool[KvRow(a, bg / a.kv_heads, bg % a.kv_heads, j) + e] = src[(bg * a.capacity + j) * D + e];
  }
}

__device__ __forceinline__ float AsFloat(float v) { return v; }
__device__ __forceinline__ float AsFloat(bf16 v) { return __bfloat162float(v); }

// Two consecutive values as floats, and two floats stored as bf16 (4- or 8-byte aligned).
__device__ __forceinline__ float2 Load2(const float* p) {
  return *reinterpret_cast<const float2*>(p);
}
__device__ __forceinline__ float2 Load2(const bf16* p) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
}
__device__ __forceinline__ void Store2(bf16* p, float a, float b) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
}

// Block (token, slice of heads): thread (x, y) takes the pairs (j, j + half) and (j + 1,
// j + 1 + half), j = 2x, of heads y, y + ny, ... of the slice (no divisions); q heads first, then
// the kv heads' k (rotated) and v into the cache at the token's position. head_dim is a multiple
// of 16 (InferHeadDimOk): j and half are even.
template <class T>
__global__ void RopeAppendKernel(const T* qkv, const float* cos, const float* sin, InferAttnDims a,
                                 int heads_per_block, bf16* q, bf16* kc, bf16* vc) {
  const int half = int(a.head_dim / 2), j = 2 * int(threadIdx.x);
  if (j >= half) return;
  const int64_t D = a.head_dim, H = a.heads, G = a.kv_heads, qd = H * D, kvd = G * D,
                width = qd + 2 * kvd;
  const int64_t t = blockIdx.x;
  const int64_t b = t / a.new_tokens, tok = t - b * a.new_tokens, pos = a.first_pos + tok;
  const float2 c = *reinterpret_cast<const float2*>(cos + tok * half + j),
               s = *reinterpret_cast<const float2*>(sin + tok * half + j);
  const T* row = qkv + t * width;
  const int64_t h0 = int64_t(blockIdx.y) * heads_per_block;
  const int64_t h1 = min(h0 + heads_per_block, H + G);
  for (int64_t head = h0 + threadIdx.y; head < h1; head += blockDim.y) {
    const bool is_q = head < H;
    const T* x = is_q ? row + head * D : row + qd + (head - H) * D;
    const float2 x0 = Load2(x + j), x1 = Load2(x + j + half);
    bf16* dst;
    if (is_q) {
      dst = q + (t * H + head) * D;
    } else {
      const int64_t g = head - H, at = KvRow(a, b, g, pos);
      dst = kc + at;
      const T* v = row + qd + kvd + g * D;
      const float2 v0 = Load2(v + j), v1 = Load2(v + j + half);
      Store2(vc + at + j, v0.x, v0.y);
      Store2(vc + at + j + half, v1.x, v1.y);
    }
    Store2(dst + j, x0.x * c.x - x1.x * s.x, x0.y * c.y - x1.y * s.y);
    Store2(dst + j + half, x1.x * c.x + x0.x * s.x, x1.y * c.y + x0.y * s.y);
  }
}

// Eight consecutive values as floats (16 or 32 bytes, aligned).
__device__ __forceinline__ void Load8(const float* p, float (&v)[8]) {
  const float4 lo = reinterpret_cast<const float4*>(p)[0],
               hi = reinterpret_cast<const float4*>(p)[1];
  v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w, v[4] = hi.x, v[5] = hi.y, v[6] = hi.z,
  v[7] = hi.w;
}
__device__ __forceinline__ void Load8(const bf16* p, float (&v)[8]) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    v[2 * i] = __uint_as_float(w[i] << 16);
    v[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}

__device__ __forceinline__ float Silu(float g) { return g / (1.f + __expf(-g)); }

// Four units' gate/up pairs (eight values) to their four bf16 outputs (8 bytes).
__device__ __forceinline__ uint2 SwiGlu4(const float (&v)[8]) {
  const __nv_bfloat162 lo = __floats2bfloat162_rn(Silu(v[0]) * v[1], Silu(v[2]) * v[3]);
  const __nv_bfloat162 hi = __floats2bfloat162_rn(Silu(v[4]) * v[5], Silu(v[6]) * v[7]);
  uint2 out;
  out.x = *reinterpret_cast<const unsigned*>(&lo);
  out.y = *reinterpret_cast<const unsigned*>(&hi);
  return out;
}

// act[i] = silu(gu[2i]) gu[2i + 1]: row t's unit f is flat unit t ffn + f, its gate and up the
// flat pair 2 (t ffn + f) of the interleaved rows. Eight units a thread (both loads issued before
// either is used, one 16-byte store) where the buffers allow it, one otherwise.
template <class T>
__global__ void SwiGluKernel(const T* gu, int64_t n, bool vec, bf16* act) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (vec) {
    for (int64_t i = first; i < n / 8; i += step) {
      float v0[8], v1[8];
      Load8(gu + 16 * i, v0);
      Load8(gu + 16 * i + 8, v1);
      const uint2 lo = SwiGlu4(v0), hi = SwiGlu4(v1);
      reinterpret_cast<uint4*>(act)[i] = make_uint4(lo.x, lo.y, hi.x, hi.y);
    }
    return;
  }
  for (int64_t i = first; i < n; i += step)
    act[i] = __float2bfloat16(Silu(AsFloat(gu[2 * i])) * AsFloat(gu[2 * i + 1]));
}

__global__ void AbsMaxKernel(const bf16* x, int64_t n, uint32_t* amax_bits) {
  __shared__ float warp_max[kThreads / 32];
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  float m = 0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    m = fmaxf(m, fabsf(__bfloat162float(x[i])));
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kThreads / 32; ++w) m = fmaxf(m, warp_max[w]);
    atomicMax(amax_bits, __float_as_uint(m));
  }
}

// e4m3's largest finite value.
constexpr float kE4m3Max = 448.f;

__global__ void QuantizeKernel(const bf16* x, int64_t n, const uint32_t* amax_bits, float* scale,
                               __nv_fp8_e4m3* out) {
  const float amax = __uint_as_float(*amax_bits);
  const float s = amax > 0 ? amax / kE4m3Max : 1.f, inv = 1.f / s;
  if (blockIdx.x == 0 && threadIdx.x == 0) *scale = s;
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    out[i] = __nv_fp8_e4m3(__bfloat162float(x[i]) * inv);
}

__global__ void ScaleKernel(bf16* x, int64_t n, float scale) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    x[i] = __float2bfloat16(__bfloat162float(x[i]) * scale);
}

}  // namespace

void EmbedRows(const int32_t* tokens, const uint16_t* embed, int64_t rows, int64_t d, float* x,
               cudaStream_t stream) {
  Require(rows > 0 && d > 0, "embedding rows and width must be positive");
  EmbedKernel<<<Blocks(rows * d), kThreads, 0, stream>>>(tokens, B(embed), rows * d, d, x);
  DLB_CHECK(cudaGetLastError());
}

void EmbedNormInput(const int32_t* tokens, const uint16_t* embed, int64_t rows, int64_t d,
                    const float* gamma, float* x, uint16_t* next_in, float* ss,
                    cudaStream_t stream) {
  Require(rows > 0 && rows <= INT_MAX && d > 0, "embedding rows and width must be positive");
  const bool vec = d % 8 == 0 && reinterpret_cast<uintptr_t>(embed) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(gamma) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(next_in) % 16 == 0;
  EmbedNormKernel<<<unsigned(rows), kThreads, 0, stream>>>(tokens, B(embed), d, gamma, x,
                                                           B(next_in), ss, vec);
  DLB_CHECK(cudaGetLastError());
}

void RmsNormBf16(const float* x, int64_t rows, int64_t stride, int64_t d, const float* w, float eps,
                 uint16_t* out, cudaStream_t stream) {
  Require(rows > 0 && rows <= INT_MAX && d > 0 && stride >= d,
          "RMSNorm rows must be positive (at most 2^31 - 1), the stride at least the width");
  const bool vec = d % 4 == 0 && stride % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(w) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(out) % 8 == 0;
  // Few rows (a decode step's): the register-held row; many (prefill's): the two-pass kernel,
  // whose fewer registers keep more blocks resident (15 against 17 us at 2048 x 4096, H200).
  if (vec && d / 4 <= int64_t(kThreads) * kNormVecs && rows <= 256)
    RmsNormCachedKernel<<<unsigned(rows), kThreads, 0, stream>>>(x, stride, d, w, eps, B(out));
  else
    RmsNormKernel<<<unsigned(rows), kThreads, 0, stream>>>(x, stride, d, w, eps, B(out), vec);
  DLB_CHECK(cudaGetLastError());
}

void CopyToPages(const uint16_t* src, int64_t positions, const InferAttnDims& a, uint16_t* pool,
                 cudaStream_t stream) {
  CheckDims(a);
  Require(a.page > 0 && positions > 0 && positions <= a.capacity,
          "copy to pages: a paged cache and 1..capacity positions");
  const int64_t n = a.batch * a.kv_heads * positions * a.head_dim;
  CopyToPagesKernel<<<Blocks(n), kThreads, 0, stream>>>(B(src), positions, a, n, B(pool));
  DLB_CHECK(cudaGetLastError());
}

namespace {

template <class T>
void LaunchRope(const T* qkv, const float* cos, const float* sin, const InferAttnDims& a,
                uint16_t* q, uint16_t* k_cache, uint16_t* v_cache, cudaStream_t stream) {
  CheckDims(a);
  const int64_t tokens = a.batch * a.new_tokens;
  Require(tokens <= INT_MAX && a.heads + a.kv_heads <= INT_MAX,
          "rotary append: at most 2^31 - 1 tokens (its grid)");
  // 256 threads a block: two pairs a thread along x, heads along y. Many tokens: a block a token
  // (tiny blocks would leave the GPU waiting on their dispatch, 50 us a Llama-3-8B layer at 2048
  // tokens); few: the heads spread over blocks too (latency).
  const int64_t heads = a.heads + a.kv_heads;
  const int tx = int((a.head_dim / 4 + 31) / 32 * 32), ty = std::max(1, 256 / tx);
  const int64_t per_block = tokens >= 256 ? heads : ty;
  const dim3 grid(unsigned(tokens), unsigned((heads + per_block - 1) / per_block));
  RopeAppendKernel<T><<<grid, dim3(unsigned(tx), unsigned(ty)), 0, stream>>>(
      qkv, cos, sin, a, int(per_block), B(q), B(k_cache), B(v_cache));
  DLB_CHECK(cudaGetLastError());
}

template <class T>
void LaunchSwiGlu(const T* gu, int64_t rows, int64_t ffn, uint16_t* act, cudaStream_t stream) {
  Require(rows > 0 && ffn > 0, "SwiGLU rows and width must be positive");
  const int64_t n = rows * ffn;
  const bool vec = n % 8 == 0 && reinterpret_cast<uintptr_t>(gu) % (8 * sizeof(T)) == 0 &&
                   reinterpret_cast<uintptr_t>(act) % 16 == 0;
  SwiGluKernel<T><<<Blocks(vec ? n / 8 : n), kThreads, 0, stream>>>(gu, n, vec, B(act));
  DLB_CHECK(cudaGetLastError());
}

}  // namespace

void RopeAppend(const float* qkv, const float* cos, const float* sin, const InferAttnDims& a,
                uint16_t* q, uint16_t* k_cache, uint16_t* v_cache, cudaStream_t stream) {
  LaunchRope(qkv, cos, sin, a, q, k_cache, v_cache, stream);
}

void RopeAppend(const uint16_t* qkv, const float* cos, const float* sin, const InferAttnDims& a,
                uint16_t* q, uint16_t* k_cache, uint16_t* v_cache, cudaStream_t stream) {
  LaunchRope(B(qkv), cos, sin, a, q, k_cache, v_cache, stream);
}

void SwiGluBf16(const float* gu, int64_t rows, int64_t ffn, uint16_t* act, cudaStream_t stream) {
  LaunchSwiGlu(gu, rows, ffn, act, stream);
}

void SwiGluBf16(const uint16_t* gu, int64_t rows, int64_t ffn, uint16_t* act, cudaStream_t stream) {
  LaunchSwiGlu(B(gu), rows, ffn, act, stream);
}

void QuantizeFp8(const uint16_t* x, int64_t n, uint32_t* amax_bits, float* scale, uint8_t* out,
                 cudaStream_t stream) {
  Require(n > 0, "fp8 quantisation of an empty tensor");
  DLB_CHECK(cudaMemsetAsync(amax_bits, 0, sizeof(uint32_t), stream));
  AbsMaxKernel<<<Blocks(n), kThreads, 0, stream>>>(B(x), n, amax_bits);
  DLB_CHECK(cudaGetLastError());
  QuantizeKernel<<<Blocks(n), kThreads, 0, stream>>>(B(x), n, amax_bits, scale,
                                                     reinterpret_cast<__nv_fp8_e4m3*>(out));
  DLB_CHECK(cudaGetLastError());
}

void ScaleBf16(uint16_t* x, size_t n, float scale, cudaStream_t stream) {
  if (n == 0) return;
  ScaleKernel<<<Blocks(int64_t(n)), kThreads, 0, stream>>>(B(x), int64_t(n), scale);
  DLB_CHECK(cudaGetLastError());
}

}  // namespace dlb::cuda

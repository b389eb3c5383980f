#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <initializer_list>
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
// Attention: warps per block, and the most query heads of one kv head a block takes.
constexpr int kAttnWarps = 4;
constexpr int kMaxHeadsPerBlock = 8;
// Key-splitting: aim for this many blocks per attention launch, with chunks of at least this many
// keys (fewer and the merge costs more than it spreads).
constexpr int64_t kTargetBlocks = 2048;
constexpr int64_t kMinChunk = 32;
// Key rows a slot loads ahead in the attention kernel.
constexpr int kKeyLoads = 4;

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

__device__ float BlockMax(float v, float* scratch) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float m = -INFINITY;
  for (int i = 0; i < int(blockDim.x / 32); ++i) m = fmaxf(m, scratch[i]);
  __syncthreads();
  return m;
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

// The query heads of one kv head that one attention block takes together (grouped-query: 4 for
// Llama-3-8B); a larger group is split over blocks, a group of no such size takes one head a block.
int HeadsPerBlock(int64_t group) {
  for (int h : {kMaxHeadsPerBlock, 4, 2})
    if (group % h == 0) return h;
  return 1;
}

// Block (token x kv head x head slice, split): the kH query heads of one kv head over one chunk
// of keys, each K and V row read once for all of them. A key row is the 16-byte loads (8 bf16
// each) of head_dim / 8 lanes, a slot, so a warp takes 32 / (head_dim / 8) keys at a time, each
// slot keeping its own running max, sum and weighted V per head; the slots and then the warps
// merge, and the block writes partial[(token * heads + head) * splits + split] = {max, sum,
// acc[head_dim]} per head. A chunk past the token's last key writes {-inf, 0, 0...}, which the
// merge skips.
template <int kH>
__global__ void __launch_bounds__(kAttnWarps * 32)
    AttnChunkKernel(const bf16* q, const bf16* kc, const bf16* vc, InferAttnDims a, int64_t chunk,
                    float scale, float* partial) {
  __shared__ float sm[kAttnWarps][kH], sl[kAttnWarps][kH];
  __shared__ float sacc[kAttnWarps][kH][kInferMaxHeadDim];
  const int64_t D = a.head_dim, G = a.kv_heads, group = a.heads / G;
  const int slices = int(group / kH);
  const int64_t t = int64_t(blockIdx.x) / (G * slices), g = int64_t(blockIdx.x) / slices % G;
  const int64_t h0 = g * group + int64_t(blockIdx.x % slices) * kH;
  const int64_t b = t / a.new_tokens, keys = a.first_pos + t % a.new_tokens + 1;
  const int64_t k0 = int64_t(blockIdx.y) * chunk, k1 = min(k0 + chunk, keys);
  const int lanes = int(D / 8), slots = 32 / lanes;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int slot = lane / lanes, sub = lane % lanes;
  const int64_t e0 = int64_t(sub) * 8;

  float qv[kH][8], acc[kH][8], m[kH], l[kH];
#pragma unroll
  for (int h = 0; h < kH; ++h) {
    m[h] = -INFINITY;
    l[h] = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      acc[h][i] = 0;
      qv[h][i] = __bfloat162float(q[(t * a.heads + h0 + h) * D + e0 + i]) * scale;
    }
  }
  const bf16* kb = kc + (b * G + g) * a.capacity * D;
  const bf16* vb = vc + (b * G + g) * a.capacity * D;
  // kKeyLoads iterations' K and V rows are loaded before any is used, so that a warp has that many
  // 16-byte loads in flight rather than one at a time.
  const int64_t stride = int64_t(kAttnWarps) * slots;
  for (int64_t base = k0 + int64_t(warp) * slots; base < k1; base += kKeyLoads * stride) {
    uint4 kraw[kKeyLoads], vraw[kKeyLoads];
    bool valid[kKeyLoads];
#pragma unroll
    for (int u = 0; u < kKeyLoads; ++u) {
      const int64_t j = base + u * stride + slot;
      valid[u] = j < k1;
      kraw[u] = make_uint4(0, 0, 0, 0);
      vraw[u] = make_uint4(0, 0, 0, 0);
      if (valid[u]) {
        kraw[u] = *reinterpret_cast<const uint4*>(kb + j * D + e0);
        vraw[u] = *reinterpret_cast<const uint4*>(vb + j * D + e0);
      }
    }
#pragma unroll
    for (int u = 0; u < kKeyLoads; ++u) {
      float kf[8], vf[8];
      const __nv_bfloat162* k2 = reinterpret_cast<const __nv_bfloat162*>(&kraw[u]);
      const __nv_bfloat162* v2 = reinterpret_cast<const __nv_bfloat162*>(&vraw[u]);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 kk = __bfloat1622float2(k2[i]), vv = __bfloat1622float2(v2[i]);
        kf[2 * i] = kk.x;
        kf[2 * i + 1] = kk.y;
        vf[2 * i] = vv.x;
        vf[2 * i + 1] = vv.y;
      }
#pragma unroll
      for (int h = 0; h < kH; ++h) {
        float dot = 0;
#pragma unroll
        for (int i = 0; i < 8; ++i) dot += qv[h][i] * kf[i];
        // A slot's lanes are a power of two, aligned: xor below `lanes` stays inside the slot.
        for (int o = lanes / 2; o > 0; o /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, o);
        if (valid[u]) {
          const float nm = fmaxf(m[h], dot);
          const float corr = expf(m[h] - nm), p = expf(dot - nm);  // m = -inf at first: corr 0
          l[h] = l[h] * corr + p;
#pragma unroll
          for (int i = 0; i < 8; ++i) acc[h][i] = acc[h][i] * corr + p * vf[i];
          m[h] = nm;
        }
      }
    }
  }
  // The slots of a warp merge into its first slot (lanes 0..lanes-1), pairwise by xor.
  for (int o = lanes; o < 32; o *= 2) {
#pragma unroll
    for (int h = 0; h < kH; ++h) {
      const float om = __shfl_xor_sync(0xffffffffu, m[h], o);
      const float ol = __shfl_xor_sync(0xffffffffu, l[h], o);
      const float nm = fmaxf(m[h], om);
      const float f1 = m[h] == -INFINITY ? 0.f : expf(m[h] - nm);
      const float f2 = om == -INFINITY ? 0.f : expf(om - nm);
      l[h] = l[h] * f1 + ol * f2;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float oa = __shfl_xor_sync(0xffffffffu, acc[h][i], o);
        acc[h][i] = acc[h][i] * f1 + oa * f2;
      }
      m[h] = nm;
    }
  }
  if (lane < lanes) {
#pragma unroll
    for (int h = 0; h < kH; ++h) {
      if (lane == 0) {
        sm[warp][h] = m[h];
        sl[warp][h] = l[h];
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) sacc[warp][h][e0 + i] = acc[h][i];
    }
  }
  __syncthreads();
  for (int h = 0; h < kH; ++h) {
    float mx = -INFINITY;
    for (int w = 0; w < kAttnWarps; ++w) mx = fmaxf(mx, sm[w][h]);
    float f[kAttnWarps], sum = 0;
    for (int w = 0; w < kAttnWarps; ++w) {
      f[w] = sm[w][h] == -INFINITY ? 0.f : expf(sm[w][h] - mx);  // a warp that saw no key
      sum += f[w] * sl[w][h];
    }
    float* out = partial + ((t * a.heads + h0 + h) * gridDim.y + blockIdx.y) * (D + 2);
    if (threadIdx.x == 0) {
      out[0] = mx;
      out[1] = sum;
    }
    for (int64_t e = threadIdx.x; e < D; e += blockDim.x) {
      float v = 0;
      for (int w = 0; w < kAttnWarps; ++w) v += f[w] * sacc[w][h][e];
      out[2 + e] = v;
    }
  }
}

// Block row x head: the chunks' states merged; chunk 0 always holds key 0, so the max is finite.
// The chunks' weights exp(m - max) go to shared memory once (ChooseSplit makes at most
// kTargetBlocks chunks), then each thread sums one output element over the chunks, its loads
// independent of one another so that several are in flight.
__global__ void AttnMergeKernel(const float* partial, int64_t splits, int64_t D, bf16* out) {
  __shared__ float weight[kTargetBlocks];
  __shared__ float scratch[32];
  const int64_t rh = blockIdx.x;
  const float* p = partial + rh * splits * (D + 2);
  float mx = -INFINITY;
  for (int64_t s = threadIdx.x; s < splits; s += blockDim.x) mx = fmaxf(mx, p[s * (D + 2)]);
  mx = BlockMax(mx, scratch);
  float sum = 0;
  for (int64_t s = threadIdx.x; s < splits; s += blockDim.x) {
    const float m = p[s * (D + 2)];
    const float f = m == -INFINITY ? 0.f : expf(m - mx);
    weight[s] = f;
    sum += f * p[s * (D + 2) + 1];
  }
  sum = BlockSum(sum, scratch);  // its barrier also publishes `weight`
  for (int64_t e = threadIdx.x; e < D; e += blockDim.x) {
    float v = 0;
#pragma unroll 8
    for (int64_t s = 0; s < splits; ++s) v += weight[s] * p[s * (D + 2) + 2 + e];
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

// Non-negative floats order as their bits do, so the maximum of |x| is an unsigned atomicMax.
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

void CheckDims(const InferAttnDims& a) {
  Require(a.batch > 0 && a.new_tokens > 0 && a.first_pos >= 0 && a.heads > 0 && a.kv_heads > 0 &&
              a.heads % a.kv_heads == 0 && InferHeadDimOk(a.head_dim) &&
              a.capacity >= a.first_pos + a.new_tokens,
          "attention sizes must be positive, heads a multiple of kv_heads, head_dim 8, 16, 32, "
          "64, 128 or 256, the capacity at least every position");
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
  const bool vec = d % 4 == 0 && stride % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(w) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(out) % 8 == 0;
  RmsNormKernel<<<unsigned(rows), kThreads, 0, stream>>>(x, stride, d, w, eps, B(out), vec);
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

int64_t AttnBlocks(const InferAttnDims& a) {
  return a.batch * a.new_tokens * a.heads / HeadsPerBlock(a.heads / a.kv_heads);
}

AttnSplit ChooseSplit(const InferAttnDims& a) {
  CheckDims(a);
  const int64_t rows = AttnBlocks(a);
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
  const int64_t blocks = AttnBlocks(a), rows = a.batch * a.new_tokens * a.heads;
  Require(rows <= INT_MAX && split.splits > 0 && split.splits <= 65535 && split.chunk > 0 &&
              split.splits * split.chunk >= a.first_pos + a.new_tokens,
          "attention grid: tokens x heads at most 2^31 - 1, 1..65535 splits covering every key");
  Require(reinterpret_cast<uintptr_t>(k_cache) % 16 == 0 &&
              reinterpret_cast<uintptr_t>(v_cache) % 16 == 0,
          "attention: the K and V caches must be 16-byte aligned (16-byte loads)");
  const float scale = float(1.0 / std::sqrt(double(a.head_dim)));
  const dim3 grid(unsigned(blocks), unsigned(split.splits));
  const unsigned threads = kAttnWarps * 32;
  switch (HeadsPerBlock(a.heads / a.kv_heads)) {
    case 8:
      AttnChunkKernel<8><<<grid, threads, 0, stream>>>(B(q), B(k_cache), B(v_cache), a, split.chunk,
                                                       scale, partial);
      break;
    case 4:
      AttnChunkKernel<4><<<grid, threads, 0, stream>>>(B(q), B(k_cache), B(v_cache), a, split.chunk,
                                                       scale, partial);
      break;
    case 2:
      AttnChunkKernel<2><<<grid, threads, 0, stream>>>(B(q), B(k_cache), B(v_cache), a, split.chunk,
                                                       scale, partial);
      break;
    default:
      AttnChunkKernel<1><<<grid, threads, 0, stream>>>(B(q), B(k_cache), B(v_cache), a, split.chunk,
                                                       scale, partial);
  }
  DLB_CHECK(cudaGetLastError());
  AttnMergeKernel<<<unsigned(rows), 128, 0, stream>>>(partial, split.splits, a.head_dim, B(out));
  DLB_CHECK(cudaGetLastError());
}

void SwiGluBf16(const float* gu, int64_t rows, int64_t ffn, uint16_t* act, cudaStream_t stream) {
  Require(rows > 0 && ffn > 0, "SwiGLU rows and width must be positive");
  SwiGluKernel<<<Blocks(rows * ffn), kThreads, 0, stream>>>(gu, rows * ffn, ffn, B(act));
  DLB_CHECK(cudaGetLastError());
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

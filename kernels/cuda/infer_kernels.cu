#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_pipeline.h>

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
// Attention blocks resident a multiprocessor (registers capped at 128 a thread for it): 16 warps,
// enough 16-byte loads in flight to keep HBM busy while other warps compute.
constexpr int kAttnBlocksPerSm = 4;
// Key-splitting: aim for this many blocks per attention launch (about four resident a
// multiprocessor on a 132-SM GPU, twice over), with chunks of at least a tile of 32 keys a warp
// (fewer and the merge costs more than it spreads).
constexpr int64_t kTargetBlocks = 1024;
constexpr int64_t kKeyTile = 32;
constexpr int64_t kMinChunk = kKeyTile * kAttnWarps;

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

__global__ void EmbedNormKernel(const int32_t* tokens, const bf16* embed, int64_t d,
                                const float* gamma, float* x, bf16* next_in, float* ss) {
  __shared__ float scratch[kThreads / 32];
  const int64_t r = blockIdx.x;
  const bf16* src = embed + int64_t(tokens[r]) * d;
  float sum = 0.f;
  for (int64_t j = threadIdx.x; j < d; j += kThreads) {
    const float v = __bfloat162float(src[j]);
    x[r * d + j] = v;
    next_in[r * d + j] = __float2bfloat16(v * gamma[j]);
    sum += v * v;
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

// Sequence b's cached row j of kv head g, contiguous or paged (InferAttnDims).
__device__ __forceinline__ int64_t KvRow(const InferAttnDims& a, int64_t b, int64_t g, int64_t j) {
  if (a.page == 0) return ((b * a.kv_heads + g) * a.capacity + j) * a.head_dim;
  const int64_t page = a.page_table[b * a.pages_per_seq + j / a.page];
  return ((page * a.kv_heads + g) * a.page + j % a.page) * a.head_dim;
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
      const int64_t g = head - H, at = KvRow(a, b, g, pos);
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

// kE bf16 of a V row, loaded as one 4-, 8- or 16-byte word.
template <int kE>
struct VWord;
template <>
struct VWord<2> {
  using type = uint32_t;
};
template <>
struct VWord<4> {
  using type = uint2;
};
template <>
struct VWord<8> {
  using type = uint4;
};

template <int kE>
__device__ __forceinline__ void Unpack(const typename VWord<kE>::type& w, float* out) {
  const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&w);
#pragma unroll
  for (int i = 0; i < kE / 2; ++i) {
    const float2 f = __bfloat1622float2(p[i]);
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}

__device__ __forceinline__ float WarpMax(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// An attention block's shared memory, all dynamic (a Llama head_dim of 256 needs more than the
// static 48 KB): the warps' K tiles (kAttnWarps x 32 rows of kD + 8 bf16: the 16-byte pad puts
// the rows that a quarter warp reads at once in different banks), then this.
template <int kH, int kD>
struct AttnShared {
  float q[kH][kD];              // the block's queries, times scale x log2(e)
  float p[kAttnWarps][kH][32];  // a tile's softmax weights
  float m[kAttnWarps][kH], l[kAttnWarps][kH];
  float acc[kAttnWarps][kH][kD];
  float weight[kH][kInferMaxSplits];  // the merge's chunk weights
  float red[32];                      // block reductions' scratch
  unsigned last;
};

template <int kD>
__host__ __device__ constexpr int KTileBytes() {
  return kAttnWarps * 32 * (kD + 8) * 2;
}
template <int kH, int kD>
__host__ __device__ constexpr int AttnSharedBytes() {
  return KTileBytes<kD>() + int(sizeof(AttnShared<kH, kD>));
}

// Block (token x kv head x head slice, split): the kH query heads of one kv head over one chunk
// of keys (GqaAttention in infer_kernels.h). Scores are kept in log2 units (the queries carry
// log2(e)), so each weight is one exp2. Lanes own keys for the scores and head dimensions for
// the weighted sum: kE dimensions a lane, kR lanes a V row, kGroups rows at once.
template <int kH, int kD>
__global__ void __launch_bounds__(kAttnWarps * 32, kAttnBlocksPerSm)
    AttnTileKernel(const bf16* q, const bf16* kc, const bf16* vc, InferAttnDims a, int64_t chunk,
                   float qscale, float* partial, unsigned* counters, bf16* out) {
  constexpr int kC = kD / 8, kKs = kD + 8;
  constexpr int kE = kD >= 64 ? kD / 32 : 2, kR = kD / kE, kGroups = 32 / kR;
  constexpr int kRows = 32 / kGroups;                           // V rows a lane adds a tile
  constexpr int kVBatch = kRows < 128 / kE ? kRows : 128 / kE;  // at most 64 registers of V
  using VW = typename VWord<kE>::type;
  extern __shared__ __align__(16) unsigned char dyn[];
  AttnShared<kH, kD>& sh = *reinterpret_cast<AttnShared<kH, kD>*>(dyn + KTileBytes<kD>());

  const int64_t G = a.kv_heads, group = a.heads / G;
  const int slices = int(group / kH);
  const int64_t t = int64_t(blockIdx.x) / (G * slices), g = int64_t(blockIdx.x) / slices % G;
  const int64_t h0 = g * group + int64_t(blockIdx.x % slices) * kH;
  const int64_t b = t / a.new_tokens, keys = a.first_pos + t % a.new_tokens + 1;
  const int64_t k0 = int64_t(blockIdx.y) * chunk, k1 = min(k0 + chunk, keys);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int vgroup = lane / kR, vsub = lane % kR;
  bf16* tile = reinterpret_cast<bf16*>(dyn) + warp * 32 * kKs;

  for (int i = threadIdx.x; i < kH * kD; i += blockDim.x)
    sh.q[i / kD][i % kD] = __bfloat162float(q[(t * a.heads + h0) * kD + i]) * qscale;
  __syncthreads();

  float m[kH], l[kH], acc[kH][kE];
#pragma unroll
  for (int h = 0; h < kH; ++h) {
    m[h] = -INFINITY;
    l[h] = 0.f;
#pragma unroll
    for (int e = 0; e < kE; ++e) acc[h][e] = 0.f;
  }
  for (int64_t j0 = k0 + int64_t(warp) * 32; j0 < k1; j0 += kAttnWarps * 32) {
    // The tile's K rows to shared memory, 16 bytes a copy; rows past the chunk repeat its last
    // (finite values; their scores are masked).
#pragma unroll
    for (int c = lane; c < 32 * kC; c += 32) {
      const int r = c / kC, cc = c % kC;
      const int64_t j = min(j0 + r, k1 - 1);
      __pipeline_memcpy_async(tile + r * kKs + cc * 8, kc + KvRow(a, b, g, j) + cc * 8, 16);
    }
    __pipeline_commit();
    VW vw[kVBatch];
#pragma unroll
    for (int u = 0; u < kVBatch; ++u) {
      const int64_t j = min(j0 + vgroup + kGroups * u, k1 - 1);
      vw[u] = *reinterpret_cast<const VW*>(vc + KvRow(a, b, g, j) + vsub * kE);
    }
    __pipeline_wait_prior(0);
    __syncwarp();

    // Scores: lane i takes key j0 + i for every head.
    float s[kH];
#pragma unroll
    for (int h = 0; h < kH; ++h) s[h] = 0.f;
#pragma unroll
    for (int cc = 0; cc < kC; ++cc) {
      const uint4 kr = *reinterpret_cast<const uint4*>(tile + lane * kKs + cc * 8);
      float kf[8];
      Unpack<8>(kr, kf);
#pragma unroll
      for (int h = 0; h < kH; ++h) {
        const float4 q0 = *reinterpret_cast<const float4*>(&sh.q[h][cc * 8]);
        const float4 q1 = *reinterpret_cast<const float4*>(&sh.q[h][cc * 8 + 4]);
        s[h] = fmaf(q0.x, kf[0], s[h]);
        s[h] = fmaf(q0.y, kf[1], s[h]);
        s[h] = fmaf(q0.z, kf[2], s[h]);
        s[h] = fmaf(q0.w, kf[3], s[h]);
        s[h] = fmaf(q1.x, kf[4], s[h]);
        s[h] = fmaf(q1.y, kf[5], s[h]);
        s[h] = fmaf(q1.z, kf[6], s[h]);
        s[h] = fmaf(q1.w, kf[7], s[h]);
      }
    }
    // The tile's online softmax: lane 0's key is always in range, so every max is finite.
    const bool valid = j0 + lane < k1;
#pragma unroll
    for (int h = 0; h < kH; ++h) {
      const float sv = valid ? s[h] : -INFINITY;
      const float nm = fmaxf(m[h], WarpMax(sv));
      const float corr = exp2f(m[h] - nm), p = exp2f(sv - nm);  // m = -inf at first: corr 0
      l[h] = l[h] * corr + p;  // each lane its own keys' sum, merged at the end
#pragma unroll
      for (int e = 0; e < kE; ++e) acc[h][e] *= corr;
      m[h] = nm;
      sh.p[warp][h][lane] = p;
    }
    __syncwarp();
    // Weighted V rows: lane (vgroup, vsub) adds rows vgroup, vgroup + kGroups, ... of the tile at
    // dimensions vsub x kE...
#pragma unroll
    for (int u0 = 0; u0 < kRows; u0 += kVBatch) {
      if (u0 > 0) {
#pragma unroll
        for (int u = 0; u < kVBatch; ++u) {
          const int64_t j = min(j0 + vgroup + kGroups * (u0 + u), k1 - 1);
          vw[u] = *reinterpret_cast<const VW*>(vc + KvRow(a, b, g, j) + vsub * kE);
        }
      }
#pragma unroll
      for (int u = 0; u < kVBatch; ++u) {
        float vf[kE];
        Unpack<kE>(vw[u], vf);
        const int r = vgroup + kGroups * (u0 + u);
#pragma unroll
        for (int h = 0; h < kH; ++h) {
          const float p = sh.p[warp][h][r];
#pragma unroll
          for (int e = 0; e < kE; ++e) acc[h][e] = fmaf(p, vf[e], acc[h][e]);
        }
      }
    }
    __syncwarp();  // the tile and weights are read before the next tile overwrites them
  }
  // The warp's state: sums over its lanes, its row groups' sums of V over lanes kR apart.
#pragma unroll
  for (int h = 0; h < kH; ++h) {
    l[h] = WarpSum(l[h]);
#pragma unroll
    for (int o = kR; o < 32; o *= 2)
#pragma unroll
      for (int e = 0; e < kE; ++e) acc[h][e] += __shfl_xor_sync(0xffffffffu, acc[h][e], o);
    if (lane == 0) {
      sh.m[warp][h] = m[h];
      sh.l[warp][h] = l[h];
    }
    if (vgroup == 0)
#pragma unroll
      for (int e = 0; e < kE; ++e) sh.acc[warp][h][vsub * kE + e] = acc[h][e];
  }
  __syncthreads();
  // The block's warps merged: one chunk's {max, sum, weighted V} a head.
  const int splits = int(gridDim.y);
  for (int i = threadIdx.x; i < kH * kD; i += blockDim.x) {
    const int h = i / kD, e = i % kD;
    float mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < kAttnWarps; ++w) mx = fmaxf(mx, sh.m[w][h]);
    float sum = 0.f, v = 0.f;
#pragma unroll
    for (int w = 0; w < kAttnWarps; ++w) {
      const float f = sh.m[w][h] == -INFINITY ? 0.f : exp2f(sh.m[w][h] - mx);  // a warp with no key
      sum += f * sh.l[w][h];
      v += f * sh.acc[w][h][e];
    }
    if (splits == 1) {
      out[(t * a.heads + h0 + h) * kD + e] = __float2bfloat16(v / sum);
    } else {
      float* dst = partial + ((t * a.heads + h0 + h) * splits + blockIdx.y) * (kD + 2);
      if (e == 0) {
        dst[0] = mx;
        dst[1] = sum;
      }
      dst[2 + e] = v;
    }
  }
  if (splits == 1) return;
  // The last block of this row to finish merges the row's chunks (the others' writes are visible
  // to it through the fence and the counter; it reads them past L1).
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned done = atomicAdd(&counters[blockIdx.x], 1u);
    sh.last = done == unsigned(splits - 1);
    if (sh.last) counters[blockIdx.x] = 0;  // every block of this launch has counted
  }
  __syncthreads();
  if (!sh.last) return;
  __threadfence();
  for (int h = 0; h < kH; ++h) {
    const float* p = partial + (t * a.heads + h0 + h) * splits * (kD + 2);
    float mx = -INFINITY;
    for (int s = threadIdx.x; s < splits; s += blockDim.x) mx = fmaxf(mx, __ldcg(p + s * (kD + 2)));
    mx = BlockMax(mx, sh.red);  // chunk 0 holds key 0: finite
    float sum = 0.f;
    for (int s = threadIdx.x; s < splits; s += blockDim.x) {
      const float ms = __ldcg(p + s * (kD + 2));
      const float f = ms == -INFINITY ? 0.f : exp2f(ms - mx);
      sh.weight[h][s] = f;
      sum += f * __ldcg(p + s * (kD + 2) + 1);
    }
    sum = BlockSum(sum, sh.red);  // its barrier also publishes the weights
    for (int e = threadIdx.x; e < kD; e += blockDim.x) {
      float v = 0.f;
#pragma unroll 8
      for (int s = 0; s < splits; ++s) v += sh.weight[h][s] * __ldcg(p + s * (kD + 2) + 2 + e);
      out[(t * a.heads + h0 + h) * kD + e] = __float2bfloat16(v / sum);
    }
    __syncthreads();
  }
}

__global__ void SwiGluKernel(const float* gu, int64_t n, int64_t ffn, bf16* act) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t t = i / ffn, f = i % ffn;
    const float g = gu[t * 2 * ffn + 2 * f], u = gu[t * 2 * ffn + 2 * f + 1];
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
              a.capacity >= a.first_pos + a.new_tokens &&
              (a.page == 0 || (a.page > 0 && a.page % kInferPageAlign == 0 &&
                               a.page_table != nullptr && a.pages_per_seq * a.page >= a.capacity)),
          "attention sizes must be positive, heads a multiple of kv_heads, head_dim 8, 16, 32, "
          "64, 128 or 256, the capacity at least every position; a paged cache's page a "
          "multiple of 32 positions, its table covering the capacity");
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
  EmbedNormKernel<<<unsigned(rows), kThreads, 0, stream>>>(tokens, B(embed), d, gamma, x,
                                                           B(next_in), ss);
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
  const int64_t want =
      std::max<int64_t>(1, std::min({(kTargetBlocks + rows - 1) / rows,
                                     (keys + kMinChunk - 1) / kMinChunk, kInferMaxSplits}));
  AttnSplit out;
  out.chunk = ((keys + want - 1) / want + kKeyTile - 1) / kKeyTile * kKeyTile;
  out.splits = (keys + out.chunk - 1) / out.chunk;  // no chunk left empty for every row
  return out;
}

size_t AttnPartialFloats(const InferAttnDims& a, const AttnSplit& split) {
  return size_t(a.batch * a.new_tokens * a.heads) * size_t(split.splits) * size_t(a.head_dim + 2) +
         size_t(AttnBlocks(a));
}

void ClearAttnScratch(float* partial, const InferAttnDims& a, const AttnSplit& split,
                      cudaStream_t stream) {
  DLB_CHECK(cudaMemsetAsync(partial, 0, AttnPartialFloats(a, split) * sizeof(float), stream));
}

namespace {

struct AttnLaunch {
  const bf16 *q, *k, *v;
  InferAttnDims a;
  int64_t chunk;
  float qscale;
  float* partial;
  unsigned* counters;
  bf16* out;
  dim3 grid;
  cudaStream_t stream;
};

template <int kH, int kD>
void LaunchAttn(const AttnLaunch& l) {
  constexpr int bytes = AttnSharedBytes<kH, kD>();
  // Above 48 KB a kernel's dynamic shared memory must be allowed once, before any capture.
  static const cudaError_t allowed = cudaFuncSetAttribute(
      AttnTileKernel<kH, kD>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  DLB_CHECK(allowed);
  AttnTileKernel<kH, kD><<<l.grid, kAttnWarps * 32, bytes, l.stream>>>(
      l.q, l.k, l.v, l.a, l.chunk, l.qscale, l.partial, l.counters, l.out);
}

template <int kH>
void LaunchAttnH(const AttnLaunch& l) {
  switch (l.a.head_dim) {
    case 8:
      return LaunchAttn<kH, 8>(l);
    case 16:
      return LaunchAttn<kH, 16>(l);
    case 32:
      return LaunchAttn<kH, 32>(l);
    case 64:
      return LaunchAttn<kH, 64>(l);
    case 128:
      return LaunchAttn<kH, 128>(l);
    default:
      return LaunchAttn<kH, 256>(l);
  }
}

}  // namespace

void GqaAttention(const uint16_t* q, const uint16_t* k_cache, const uint16_t* v_cache,
                  const InferAttnDims& a, const AttnSplit& split, float* partial, uint16_t* out,
                  cudaStream_t stream) {
  CheckDims(a);
  const int64_t blocks = AttnBlocks(a), rows = a.batch * a.new_tokens * a.heads;
  Require(rows <= INT_MAX && split.splits > 0 && split.splits <= kInferMaxSplits &&
              split.chunk > 0 && split.chunk % kKeyTile == 0 &&
              split.splits * split.chunk >= a.first_pos + a.new_tokens,
          "attention grid: tokens x heads at most 2^31 - 1, 1..256 splits of a multiple of 32 "
          "keys covering every key");
  Require(reinterpret_cast<uintptr_t>(k_cache) % 16 == 0 &&
              reinterpret_cast<uintptr_t>(v_cache) % 16 == 0,
          "attention: the K and V caches must be 16-byte aligned (16-byte loads)");
  AttnLaunch l;
  l.q = B(q);
  l.k = B(k_cache);
  l.v = B(v_cache);
  l.a = a;
  l.chunk = split.chunk;
  l.qscale = float(1.0 / std::sqrt(double(a.head_dim)) / std::log(2.0));  // log2 units
  l.partial = partial;
  l.counters =
      reinterpret_cast<unsigned*>(partial + (AttnPartialFloats(a, split) - size_t(blocks)));
  l.out = B(out);
  l.grid = dim3(unsigned(blocks), unsigned(split.splits));
  l.stream = stream;
  switch (HeadsPerBlock(a.heads / a.kv_heads)) {
    case 8:
      LaunchAttnH<8>(l);
      break;
    case 4:
      LaunchAttnH<4>(l);
      break;
    case 2:
      LaunchAttnH<2>(l);
      break;
    default:
      LaunchAttnH<1>(l);
  }
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

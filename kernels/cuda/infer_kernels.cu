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
// Key-splitting, measured on an H200 at Llama-3-8B's attention over 2048 keys (per layer at
// B 1 / 8 / 32 / 128, docs/families/infer.md): chunks of kPreferredChunk keys (four tiles a
// warp: 25 us at B 8 against 32 for 128 keys and 40 for 160, 79 us at B 32 against 87 for 544),
// unless that leaves fewer than kMinBlocks blocks (then smaller chunks, down to a tile a warp:
// 8 us at B 1 against 13 for 512) or more than kMaxSplitBlocks (then fewer chunks: the rows alone
// fill the GPU and each split adds a merge; 273 us unsplit at B 128 against 289 for 512).
constexpr int64_t kKeyTile = 32;
constexpr int64_t kMinChunk = kKeyTile * kAttnWarps;
constexpr int64_t kPreferredChunk = 4 * kMinChunk;
constexpr int64_t kMinBlocks = 132;  // one a multiprocessor of an H100 or H200
constexpr int64_t kMaxSplitBlocks = 1536;

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

// Sequence b's cached row j of kv head g, contiguous or paged (InferAttnDims).
__device__ __forceinline__ int64_t KvRow(const InferAttnDims& a, int64_t b, int64_t g, int64_t j) {
  if (a.page == 0) return ((b * a.kv_heads + g) * a.capacity + j) * a.head_dim;
  const int64_t page = a.page_table[b * a.pages_per_seq + j / a.page];
  return ((page * a.kv_heads + g) * a.page + j % a.page) * a.head_dim;
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

// The query heads of one kv head that one attention block takes together (grouped-query: 4 for
// Llama-3-8B); a larger group is split over blocks, a group of no such size takes one head a block.
int HeadsPerBlock(int64_t group) {
  for (int h : {kMaxHeadsPerBlock, 4, 2})
    if (group % h == 0) return h;
  return 1;
}

__device__ __forceinline__ float WarpMax(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// d = a b + c on the tensor cores, one m16n8k16 bf16 tile with f32 accumulation (PTX's fragment
// layouts: a lane's groupID = lane / 4 and its index in the group lane % 4). Only rows 0-7 of A
// are ever used here (up to 8 query heads), so a1, a3 and the rows 8-15 of c and d are zeros
// this passes and drops.
__device__ __forceinline__ void Mma(float& d0, float& d1, uint32_t a0, uint32_t a2, uint32_t b0,
                                    uint32_t b1) {
  float x2 = 0.f, x3 = 0.f;
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d0), "+f"(d1), "+f"(x2), "+f"(x3)
      : "r"(a0), "r"(0u), "r"(a2), "r"(0u), "r"(b0), "r"(b1));
}

// Four 8x8 bf16 matrices from shared memory, transposed (each lane names one row of one matrix):
// V's rows as the B operand of P V.
__device__ __forceinline__ void LdMatrixT(const bf16* row, uint32_t& r0, uint32_t& r1, uint32_t& r2,
                                          uint32_t& r3) {
  const unsigned addr = unsigned(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

__device__ __forceinline__ uint32_t Pack(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// An attention block's shared memory, all dynamic (a head_dim of 256 needs more than the static
// 48 KB): each warp's K and V tiles (32 rows of kD + 8 bf16: the 16-byte pad puts the rows that
// one phase of a 16-byte load or ldmatrix reads in different banks), and, once the tiles are
// done, the same bytes hold the merges' state.
template <int kD>
__host__ __device__ constexpr int TileStride() {
  return kD + 8;
}
template <int kD>
__host__ __device__ constexpr int TileBytes() {
  return kAttnWarps * 2 * 32 * TileStride<kD>() * 2;
}
template <int kH, int kD>
struct AttnMerge {
  float m[kAttnWarps][kH], l[kAttnWarps][kH];
  float acc[kAttnWarps][kH][kD];
  float weight[kH][kInferMaxSplits], sum[kH][kInferMaxSplits];  // the chunks' merge
  float head_sum[kH];
  unsigned last;
};
template <int kH, int kD>
__host__ __device__ constexpr int AttnSharedBytes() {
  return TileBytes<kD>() > int(sizeof(AttnMerge<kH, kD>)) ? TileBytes<kD>()
                                                          : int(sizeof(AttnMerge<kH, kD>));
}

// Block (token x kv head x head slice, split): the kH query heads of one kv head over one chunk
// of keys (GqaAttention in infer_kernels.h). A warp takes tiles of 32 keys: S = Q K^T and O += P V
// on the tensor cores, Q's rows the kH heads (rows kH.. of the 16 zero), K and V copied to shared
// memory asynchronously; the online softmax runs on S's fragments in f32, in log2 units (exp2 of
// the scores times scale x log2(e)). A lane holds row gid = lane / 4 of S and O, its keys and
// dimensions tig x 2 + {0, 1} of each 8-wide tile (tig = lane % 4).
template <int kH, int kD>
__global__ void __launch_bounds__(kAttnWarps * 32)
    AttnMmaKernel(const bf16* q, const bf16* kc, const bf16* vc, InferAttnDims a, int64_t chunk,
                  float qscale, float* partial, unsigned* counters, bf16* out) {
  constexpr int kS = TileStride<kD>(), kC = kD / 8, kK = kD / 16, kN = kD / 8;
  extern __shared__ __align__(16) unsigned char dyn[];

  const int64_t G = a.kv_heads, group = a.heads / G;
  const int slices = int(group / kH);
  const int64_t t = int64_t(blockIdx.x) / (G * slices), g = int64_t(blockIdx.x) / slices % G;
  const int64_t h0 = g * group + int64_t(blockIdx.x % slices) * kH;
  const int64_t b = t / a.new_tokens, keys = a.first_pos + t % a.new_tokens + 1;
  const int64_t k0 = int64_t(blockIdx.y) * chunk, k1 = min(k0 + chunk, keys);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane / 4, tig = lane % 4;
  bf16* ks = reinterpret_cast<bf16*>(dyn) + warp * 2 * 32 * kS;
  bf16* vs = ks + 32 * kS;

  // Q's A fragments (rows gid < kH; k = tig x 2 + {0, 1} and + 8 of each 16-wide step).
  uint32_t qa[kK][2];
  const bf16* qrow = q + (t * a.heads + h0 + gid) * kD;
#pragma unroll
  for (int kk = 0; kk < kK; ++kk) {
    qa[kk][0] = gid < kH ? *reinterpret_cast<const uint32_t*>(qrow + kk * 16 + tig * 2) : 0u;
    qa[kk][1] = gid < kH ? *reinterpret_cast<const uint32_t*>(qrow + kk * 16 + 8 + tig * 2) : 0u;
  }
  float m = -INFINITY, l = 0.f, o[kN][2];
#pragma unroll
  for (int n = 0; n < kN; ++n) o[n][0] = o[n][1] = 0.f;

  for (int64_t j0 = k0 + int64_t(warp) * 32; j0 < k1; j0 += kAttnWarps * 32) {
    // The tile's K and V rows, 16 bytes a copy; rows past the chunk repeat its last (finite
    // values; their scores are masked).
#pragma unroll
    for (int c = lane; c < 32 * kC; c += 32) {
      const int r = c / kC, cc = c % kC;
      const int64_t at = KvRow(a, b, g, min(j0 + r, k1 - 1)) + cc * 8;
      __pipeline_memcpy_async(ks + r * kS + cc * 8, kc + at, 16);
      __pipeline_memcpy_async(vs + r * kS + cc * 8, vc + at, 16);
    }
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncwarp();

    // S = Q K^T, four n-tiles of 8 keys; B[k][n] = K[key n][dim k]: two 4-byte reads a step.
    float s[4][2];
#pragma unroll
    for (int n = 0; n < 4; ++n) {
      s[n][0] = s[n][1] = 0.f;
      const bf16* krow = ks + (n * 8 + gid) * kS + tig * 2;
#pragma unroll
      for (int kk = 0; kk < kK; ++kk)
        Mma(s[n][0], s[n][1], qa[kk][0], qa[kk][1],
            *reinterpret_cast<const uint32_t*>(krow + kk * 16),
            *reinterpret_cast<const uint32_t*>(krow + kk * 16 + 8));
    }
    // The online softmax of row gid over the tile (its four lanes hold its 32 keys). Key j0 is
    // always in range, so the max is finite.
    float mx = -INFINITY;
#pragma unroll
    for (int n = 0; n < 4; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const bool valid = j0 + n * 8 + tig * 2 + e < k1;
        s[n][e] = valid ? s[n][e] * qscale : -INFINITY;
        mx = fmaxf(mx, s[n][e]);
      }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float nm = fmaxf(m, mx), corr = exp2f(m - nm);  // m = -inf at first: corr 0
    m = nm;
    l *= corr;
#pragma unroll
    for (int n = 0; n < kN; ++n) {
      o[n][0] *= corr;
      o[n][1] *= corr;
    }
    uint32_t pa[2][2];  // P as the A operand: keys 16i.. of step i
#pragma unroll
    for (int n = 0; n < 4; ++n) {
      const float p0 = exp2f(s[n][0] - nm), p1 = exp2f(s[n][1] - nm);
      l += p0 + p1;
      pa[n / 2][n % 2] = Pack(p0, p1);
    }
    // O += P V: V's 16 x 16 blocks through ldmatrix.trans, two n-tiles of 8 dims a load.
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int np = 0; np < kN / 2; ++np) {
        uint32_t b0, b1, b2, b3;
        LdMatrixT(
            vs + (i * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kS + np * 16 + (lane >> 4) * 8, b0,
            b1, b2, b3);
        Mma(o[2 * np][0], o[2 * np][1], pa[i][0], pa[i][1], b0, b1);
        Mma(o[2 * np + 1][0], o[2 * np + 1][1], pa[i][0], pa[i][1], b2, b3);
      }
    __syncwarp();  // the tiles are read before the next copies overwrite them
  }
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  l += __shfl_xor_sync(0xffffffffu, l, 2);
  __syncthreads();  // every warp is done with its tiles: their bytes now hold the merge
  AttnMerge<kH, kD>& sh = *reinterpret_cast<AttnMerge<kH, kD>*>(dyn);
  if (gid < kH) {
    if (tig == 0) {
      sh.m[warp][gid] = m;
      sh.l[warp][gid] = l;
    }
#pragma unroll
    for (int n = 0; n < kN; ++n) {
      sh.acc[warp][gid][n * 8 + tig * 2] = o[n][0];
      sh.acc[warp][gid][n * 8 + tig * 2 + 1] = o[n][1];
    }
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
  // The chunks' maxima and sums, then each head's weights (a warp a head), then the outputs: three
  // rounds of loads that do not wait on one another within a round.
  for (int i = threadIdx.x; i < kH * splits; i += blockDim.x) {
    const int h = i / splits, s = i % splits;
    const float* p = partial + ((t * a.heads + h0 + h) * splits + s) * (kD + 2);
    sh.weight[h][s] = __ldcg(p);
    sh.sum[h][s] = __ldcg(p + 1);
  }
  __syncthreads();
  for (int h = warp; h < kH; h += kAttnWarps) {
    float mx = -INFINITY;  // chunk 0 holds key 0: finite
    for (int s = lane; s < splits; s += 32) mx = fmaxf(mx, sh.weight[h][s]);
    mx = WarpMax(mx);
    float total = 0.f;
    for (int s = lane; s < splits; s += 32) {
      const float f = sh.weight[h][s] == -INFINITY ? 0.f : exp2f(sh.weight[h][s] - mx);
      sh.weight[h][s] = f;
      total += f * sh.sum[h][s];
    }
    total = WarpSum(total);
    if (lane == 0) sh.head_sum[h] = total;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kH * kD; i += blockDim.x) {
    const int h = i / kD, e = i % kD;
    const float* p = partial + (t * a.heads + h0 + h) * splits * (kD + 2) + 2 + e;
    float v = 0.f;
#pragma unroll 8
    for (int s = 0; s < splits; ++s) v += sh.weight[h][s] * __ldcg(p + s * (kD + 2));
    out[(t * a.heads + h0 + h) * kD + e] = __float2bfloat16(v / sh.head_sum[h]);
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

void CheckDims(const InferAttnDims& a) {
  Require(a.batch > 0 && a.new_tokens > 0 && a.first_pos >= 0 && a.heads > 0 && a.kv_heads > 0 &&
              a.heads % a.kv_heads == 0 && InferHeadDimOk(a.head_dim) &&
              a.capacity >= a.first_pos + a.new_tokens &&
              (a.page == 0 || (a.page > 0 && a.page % kInferPageAlign == 0 &&
                               a.page_table != nullptr && a.pages_per_seq * a.page >= a.capacity)),
          "attention sizes must be positive, heads a multiple of kv_heads, head_dim 16, 32, 64, "
          "128 or 256, the capacity at least every position; a paged cache's page a "
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

int64_t AttnBlocks(const InferAttnDims& a) {
  return a.batch * a.new_tokens * a.heads / HeadsPerBlock(a.heads / a.kv_heads);
}

AttnSplit ChooseSplit(const InferAttnDims& a) {
  CheckDims(a);
  const int64_t rows = AttnBlocks(a);
  const int64_t keys = a.first_pos + a.new_tokens;
  int64_t want = (keys + kPreferredChunk - 1) / kPreferredChunk;
  if (rows * want > kMaxSplitBlocks) want = std::max<int64_t>(1, kMaxSplitBlocks / rows);
  if (rows * want < kMinBlocks)
    want = std::min((kMinBlocks + rows - 1) / rows, (keys + kMinChunk - 1) / kMinChunk);
  want = std::clamp<int64_t>(want, 1, kInferMaxSplits);
  AttnSplit out;
  // Whole tiles; past a tile a warp, whole tiles for every warp (13 tiles on 4 warps wait on the
  // one with 4).
  const int64_t unit = want * kMinChunk < keys ? kMinChunk : kKeyTile;
  out.chunk = ((keys + want - 1) / want + unit - 1) / unit * unit;
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
      AttnMmaKernel<kH, kD>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  DLB_CHECK(allowed);
  AttnMmaKernel<kH, kD><<<l.grid, kAttnWarps * 32, bytes, l.stream>>>(
      l.q, l.k, l.v, l.a, l.chunk, l.qscale, l.partial, l.counters, l.out);
}

template <int kH>
void LaunchAttnH(const AttnLaunch& l) {
  switch (l.a.head_dim) {
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

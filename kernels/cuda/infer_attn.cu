// The decode attention of the inference step (GqaAttention in infer_kernels.h): a split-key
// tensor-core kernel in the manner of flash-decoding, and how it splits the keys.
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_pipeline.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "kernels/cuda/check.h"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/infer_kernels.cuh"
#include "kernels/cuda/infer_kernels.h"

namespace dlb::cuda {

using namespace infer_detail;  // NOLINT: this file's shared helpers

namespace {

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
template <int kD, int kW = kAttnWarps>
__host__ __device__ constexpr int TileBytes() {
  return kW * 2 * 32 * TileStride<kD>() * 2;
}
template <int kH, int kD, int kW = kAttnWarps>
struct AttnMerge {
  float m[kW][kH], l[kW][kH];
  float acc[kW][kH][kD];
  float weight[kH][kInferMaxSplits], sum[kH][kInferMaxSplits];  // the chunks' merge
  float head_sum[kH];
  unsigned last;
};
template <int kH, int kD>
__host__ __device__ constexpr int AttnSharedBytes() {
  return TileBytes<kD>() > int(sizeof(AttnMerge<kH, kD>)) ? TileBytes<kD>()
                                                          : int(sizeof(AttnMerge<kH, kD>));
}

// A warp's tile of 32 cached keys from j0 on (of the chunk ending before k1): its K and V rows
// copied to shared memory (ks, vs; rows kS apart), 16 bytes a copy, asynchronously (the caller
// commits and waits). Rows past the chunk repeat its last (finite values; their scores are
// masked).
template <int kD>
__device__ __forceinline__ void CopyTile(const InferAttnDims& a, int64_t b, int64_t g, int64_t j0,
                                         int64_t k1, const bf16* kc, const bf16* vc, bf16* ks,
                                         bf16* vs, int lane) {
  constexpr int kS = TileStride<kD>(), kC = kD / 8;
#pragma unroll
  for (int c = lane; c < 32 * kC; c += 32) {
    const int r = c / kC, cc = c % kC;
    const int64_t at = KvRow(a, b, g, min(j0 + r, k1 - 1)) + cc * 8;
    __pipeline_memcpy_async(ks + r * kS + cc * 8, kc + at, 16);
    __pipeline_memcpy_async(vs + r * kS + cc * 8, vc + at, 16);
  }
}

// One tile of 32 keys (from j0; keys from k1 on masked) into a warp's online softmax: m and l the
// running maximum and sum of its row gid = lane / 4, o its O fragments. S = Q K^T and O += P V on
// the tensor cores (qa: Q's A fragments), the softmax in f32 in log2 units (qscale: the score's
// scale times log2(e)).
template <int kD>
__device__ __forceinline__ void AttendTile(const uint32_t (&qa)[kD / 16][2], const bf16* ks,
                                           const bf16* vs, int64_t j0, int64_t k1, float qscale,
                                           float& m, float& l, float (&o)[kD / 8][2], int lane) {
  constexpr int kS = TileStride<kD>(), kK = kD / 16, kN = kD / 8;
  const int gid = lane / 4, tig = lane % 4;
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
      LdMatrixT(vs + (i * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kS + np * 16 + (lane >> 4) * 8,
                b0, b1, b2, b3);
      Mma(o[2 * np][0], o[2 * np][1], pa[i][0], pa[i][1], b0, b1);
      Mma(o[2 * np + 1][0], o[2 * np + 1][1], pa[i][0], pa[i][1], b2, b3);
    }
}

// A warp's online softmax over its tiles of a chunk: from j0 on, kW x 32 keys apart, up to k1,
// each copied (the first already in flight where first_in_flight), awaited and attended. m, l and
// o as AttendTile's, set here.
template <int kD, int kW>
__device__ __forceinline__ void AttendTiles(const InferAttnDims& a, int64_t b, int64_t g,
                                            int64_t j0, int64_t k1, bool first_in_flight,
                                            const bf16* kc, const bf16* vc, bf16* ks, bf16* vs,
                                            const uint32_t (&qa)[kD / 16][2], float qscale,
                                            float& m, float& l, float (&o)[kD / 8][2], int lane) {
  m = -INFINITY;
  l = 0.f;
#pragma unroll
  for (int n = 0; n < kD / 8; ++n) o[n][0] = o[n][1] = 0.f;
  for (bool first = true; j0 < k1; j0 += kW * 32, first = false) {
    if (!first || !first_in_flight) {
      CopyTile<kD>(a, b, g, j0, k1, kc, vc, ks, vs, lane);
      __pipeline_commit();
    }
    __pipeline_wait_prior(0);
    __syncwarp();
    AttendTile<kD>(qa, ks, vs, j0, k1, qscale, m, l, o, lane);
    __syncwarp();  // the tiles are read before the next copies overwrite them
  }
}

// Q's A fragments from a lane's row gid = lane / 4 of Q (rows gid < kH; k = tig x 2 + {0, 1} and
// + 8 of each 16-wide step, tig = lane % 4): qrow is that row's head_dim bf16.
template <int kH, int kD>
__device__ __forceinline__ void LoadQ(const bf16* qrow, int lane, uint32_t (&qa)[kD / 16][2]) {
  const int gid = lane / 4, tig = lane % 4;
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk) {
    qa[kk][0] = gid < kH ? *reinterpret_cast<const uint32_t*>(qrow + kk * 16 + tig * 2) : 0u;
    qa[kk][1] = gid < kH ? *reinterpret_cast<const uint32_t*>(qrow + kk * 16 + 8 + tig * 2) : 0u;
  }
}

// A warp's softmax state (row gid = lane / 4 of m, l and O; l summed over the row's four lanes
// here) into the block's merge, for rows gid < kH.
template <int kH, int kD, int kW>
__device__ __forceinline__ void StoreWarpState(AttnMerge<kH, kD, kW>& sh, float m, float l,
                                               const float (&o)[kD / 8][2], int warp, int lane) {
  const int gid = lane / 4, tig = lane % 4;
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  l += __shfl_xor_sync(0xffffffffu, l, 2);
  if (gid >= kH) return;
  if (tig == 0) {
    sh.m[warp][gid] = m;
    sh.l[warp][gid] = l;
  }
#pragma unroll
  for (int n = 0; n < kD / 8; ++n) {
    sh.acc[warp][gid][n * 8 + tig * 2] = o[n][0];
    sh.acc[warp][gid][n * 8 + tig * 2 + 1] = o[n][1];
  }
}

// Head h's chunk over the block's warps: its max mx, its sum and dimension e of its weighted V
// (not yet divided by the sum).
template <int kH, int kD, int kW>
__device__ __forceinline__ void MergeWarps(const AttnMerge<kH, kD, kW>& sh, int h, int e, float& mx,
                                           float& sum, float& v) {
  mx = -INFINITY;
#pragma unroll
  for (int w = 0; w < kW; ++w) mx = fmaxf(mx, sh.m[w][h]);
  sum = 0.f;
  v = 0.f;
#pragma unroll
  for (int w = 0; w < kW; ++w) {
    const float f = sh.m[w][h] == -INFINITY ? 0.f : exp2f(sh.m[w][h] - mx);  // a warp with no key
    sum += f * sh.l[w][h];
    v += f * sh.acc[w][h][e];
  }
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
  constexpr int kS = TileStride<kD>(), kK = kD / 16, kN = kD / 8;
  extern __shared__ __align__(16) unsigned char dyn[];

  const int64_t G = a.kv_heads, group = a.heads / G;
  const int slices = int(group / kH);
  const int64_t t = int64_t(blockIdx.x) / (G * slices), g = int64_t(blockIdx.x) / slices % G;
  const int64_t h0 = g * group + int64_t(blockIdx.x % slices) * kH;
  const int64_t b = t / a.new_tokens, keys = a.first_pos + t % a.new_tokens + 1;
  const int64_t k0 = int64_t(blockIdx.y) * chunk, k1 = min(k0 + chunk, keys);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane / 4;
  bf16* ks = reinterpret_cast<bf16*>(dyn) + warp * 2 * 32 * kS;
  bf16* vs = ks + 32 * kS;

  uint32_t qa[kK][2];
  LoadQ<kH, kD>(q + (t * a.heads + h0 + gid) * kD, lane, qa);
  float m, l, o[kN][2];
  AttendTiles<kD, kAttnWarps>(a, b, g, k0 + int64_t(warp) * 32, k1, false, kc, vc, ks, vs, qa,
                              qscale, m, l, o, lane);
  __syncthreads();  // every warp is done with its tiles: their bytes now hold the merge
  AttnMerge<kH, kD>& sh = *reinterpret_cast<AttnMerge<kH, kD>*>(dyn);
  StoreWarpState(sh, m, l, o, warp, lane);
  __syncthreads();
  // The block's warps merged: one chunk's {max, sum, weighted V} a head.
  const int splits = int(gridDim.y);
  for (int i = threadIdx.x; i < kH * kD; i += blockDim.x) {
    const int h = i / kD, e = i % kD;
    float mx, sum, v;
    MergeWarps(sh, h, e, mx, sum, v);
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

// The decode step's rotary append and attention in one launch (RopeAttention in infer_kernels.h).
// Blocks as AttnMmaKernel's with one token a sequence and kDecodeWarps warps, over chunks of the
// cached keys; the chunks of a row are one thread-block cluster (gridDim.y blocks), which merges
// them in distributed shared memory instead of a round trip through global memory. The launch is
// a programmatic dependent one: each warp copies its first tile of cached keys, which no kernel of
// the step writes, before waiting on the projection that wrote qkv; the next kernel may launch as
// this one starts. Measured on an H200 at Llama-3-8B, B 1, 2048 cached keys, each after its
// layer's e4m3 qkv product in a CUDA graph: 16.6 us a layer for both against 23.0 for the
// product, RopeAppend and AttnMmaKernel (docs/families/infer.md); with this step's key in the
// last chunk (2049 keys, chunks of 288: one warp two tiles in turn) the step was slower than with
// cuDNN's attention, hence the key added after the chunk.
// Warps a block: 8 at head dims to 128 (a block's tiles, 136 KB at 128); 4 at 256, whose tiles
// would not fit 8.
template <int kD>
constexpr int kDecodeWarps = kD <= 128 ? 8 : 4;
constexpr int64_t kDecodeMaxSplits = 8;  // a portable cluster's blocks

template <int kH, int kD>
struct RopeAttnShared {
  bf16 q[kH][kD];      // the rotated queries
  bf16 k[kD], v[kD];   // this step's key (rotated) and value, in the row's last block
  float score[kH];     // and that key's score a head
  float m[kH], l[kH];  // the chunk's max and sum a head, and its weighted V: what the cluster's
  float acc[kH][kD];   // blocks read from one another
};
template <int kH, int kD>
__host__ __device__ constexpr int RopeAttnTileBytes() {
  return TileBytes<kD, kDecodeWarps<kD>>() > int(sizeof(AttnMerge<kH, kD, kDecodeWarps<kD>>))
             ? TileBytes<kD, kDecodeWarps<kD>>()
             : int(sizeof(AttnMerge<kH, kD, kDecodeWarps<kD>>));
}
template <int kH, int kD>
__host__ __device__ constexpr int RopeAttnSharedBytes() {
  return RopeAttnTileBytes<kH, kD>() + int(sizeof(RopeAttnShared<kH, kD>));
}

// x's pair (j, j + half) rotated by (c, s), as RopeAppend rotates it.
__device__ __forceinline__ void Rotate(const float* x, int j, int half, float c, float s,
                                       bf16* dst) {
  const float x0 = x[j], x1 = x[j + half];
  dst[j] = __float2bfloat16(x0 * c - x1 * s);
  dst[j + half] = __float2bfloat16(x1 * c + x0 * s);
}

template <int kH, int kD>
__global__ void __launch_bounds__(kDecodeWarps<kD> * 32)
    RopeAttnKernel(const float* __restrict__ qkv, const float* __restrict__ cos,
                   const float* __restrict__ sin, InferAttnDims a, int64_t chunk, float qscale,
                   bf16* kc, bf16* vc, bf16* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int kW = kDecodeWarps<kD>, kS = TileStride<kD>(), kC = kD / 8, kN = kD / 8,
                kHalf = kD / 2;
  extern __shared__ __align__(16) unsigned char dyn[];
  RopeAttnShared<kH, kD>& sh =
      *reinterpret_cast<RopeAttnShared<kH, kD>*>(dyn + RopeAttnTileBytes<kH, kD>());

  const int64_t G = a.kv_heads, H = a.heads, group = H / G;
  const int slices = int(group / kH);
  const int64_t b = int64_t(blockIdx.x) / (G * slices), g = int64_t(blockIdx.x) / slices % G;
  const int64_t h0 = g * group + int64_t(blockIdx.x % slices) * kH;
  // The chunks split the cached keys (positions before pos); this step's key, at pos, is added by
  // the row's last block after its chunk: the cached keys' tiles stay whole at a round context.
  const int64_t pos = a.first_pos;
  const int64_t k0 = int64_t(blockIdx.y) * chunk, k1 = min(k0 + chunk, pos);
  const bool has_new = blockIdx.y + 1 == gridDim.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  bf16* ks = reinterpret_cast<bf16*>(dyn) + warp * 2 * 32 * kS;
  bf16* vs = ks + 32 * kS;

  const int64_t j0 = k0 + int64_t(warp) * 32;
  if (j0 < k1) CopyTile<kD>(a, b, g, j0, k1, kc, vc, ks, vs, lane);
  __pipeline_commit();
  LetDependentsStart();
  WaitForPrevious();

  // The queries rotated; in the row's last block, this step's key rotated and its value, both
  // appended to the caches (by the first slice of heads).
  const float* row = qkv + b * (H + 2 * G) * kD;
  for (int i = threadIdx.x; i < (kH + 2) * kHalf; i += blockDim.x) {
    const int hh = i / kHalf, j = i % kHalf;
    if (hh < kH) {
      Rotate(row + (h0 + hh) * kD, j, kHalf, cos[j], sin[j], sh.q[hh]);
    } else if (has_new && hh == kH) {
      Rotate(row + (H + g) * kD, j, kHalf, cos[j], sin[j], sh.k);
    } else if (has_new) {
      const float* v = row + (H + G + g) * kD;
      sh.v[j] = __float2bfloat16(v[j]);
      sh.v[j + kHalf] = __float2bfloat16(v[j + kHalf]);
    }
  }
  __syncthreads();
  if (has_new && blockIdx.x % slices == 0)
    for (int c = threadIdx.x; c < kC; c += blockDim.x) {
      const int64_t at = KvRow(a, b, g, pos) + c * 8;
      *reinterpret_cast<uint4*>(kc + at) = *reinterpret_cast<const uint4*>(sh.k + c * 8);
      *reinterpret_cast<uint4*>(vc + at) = *reinterpret_cast<const uint4*>(sh.v + c * 8);
    }
  uint32_t qa[kD / 16][2];
  LoadQ<kH, kD>(sh.q[min(lane / 4, kH - 1)], lane, qa);
  float m, l, o[kN][2];
  AttendTiles<kD, kW>(a, b, g, j0, k1, true, kc, vc, ks, vs, qa, qscale, m, l, o, lane);
  // This step's key's score a head (log2 units), from the same bf16 q and k: a warp a head.
  if (has_new)
    for (int h = warp; h < kH; h += kW) {
      float dot = 0.f;
      for (int e = lane; e < kD; e += 32)
        dot += __bfloat162float(sh.q[h][e]) * __bfloat162float(sh.k[e]);
      dot = WarpSum(dot);
      if (lane == 0) sh.score[h] = dot * qscale;
    }
  __syncthreads();  // every warp is done with its tiles: their bytes now hold the merge
  AttnMerge<kH, kD, kW>& merge = *reinterpret_cast<AttnMerge<kH, kD, kW>*>(dyn);
  StoreWarpState(merge, m, l, o, warp, lane);
  __syncthreads();
  const int splits = int(gridDim.y);
  for (int i = threadIdx.x; i < kH * kD; i += blockDim.x) {
    const int h = i / kD, e = i % kD;
    float mx, sum, v;
    MergeWarps(merge, h, e, mx, sum, v);  // a chunk of no cached key: mx -inf, sum and v 0
    if (has_new) {
      const float s = sh.score[h], nm = fmaxf(mx, s), f = exp2f(mx - nm), p = exp2f(s - nm);
      mx = nm;
      sum = sum * f + p;
      v = v * f + p * __bfloat162float(sh.v[e]);
    }
    if (splits == 1) {
      out[(b * H + h0 + h) * kD + e] = __float2bfloat16(v / sum);
    } else {
      if (e == 0) {
        sh.m[h] = mx;
        sh.l[h] = sum;
      }
      sh.acc[h][e] = v;
    }
  }
  if (splits == 1) return;
  // The cluster's chunks merged: block r of the row writes its share of the kH x kD outputs,
  // reading every chunk's state from its block's shared memory.
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  cluster.sync();
  const int per = (kH * kD + splits - 1) / splits, r = int(cluster.block_rank());
  for (int i = r * per + int(threadIdx.x); i < min((r + 1) * per, kH * kD); i += blockDim.x) {
    const int h = i / kD, e = i % kD;
    float mx = -INFINITY;
    for (int c = 0; c < splits; ++c) mx = fmaxf(mx, *cluster.map_shared_rank(&sh.m[h], c));
    float sum = 0.f, v = 0.f;
    for (int c = 0; c < splits; ++c) {
      const float f = exp2f(*cluster.map_shared_rank(&sh.m[h], c) - mx);  // every chunk has keys
      sum += f * *cluster.map_shared_rank(&sh.l[h], c);
      v += f * *cluster.map_shared_rank(&sh.acc[h][e], c);
    }
    out[(b * H + h0 + h) * kD + e] = __float2bfloat16(v / sum);
  }
  cluster.sync();  // no block leaves while the others read its shared memory
#endif
}
}  // namespace

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

// What every attention launch takes beside its tensors.
struct AttnGrid {
  InferAttnDims a;
  int64_t chunk;
  float qscale;
  dim3 grid;
  cudaStream_t stream;
};

struct AttnLaunch : AttnGrid {
  const bf16 *q, *k, *v;
  float* partial;
  unsigned* counters;
  bf16* out;
};

// A kernel's dynamic shared memory above 48 KB must be allowed, once, before any capture; a
// failure is thrown, not left for the next call to find.
template <auto kKernel>
void AllowSharedBytes(int bytes) {
  static const cudaError_t allowed =
      cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (allowed != cudaSuccess) cudaGetLastError();
  DLB_CHECK(allowed);
}

template <int kH, int kD>
struct LaunchAttn {
  static void Run(const AttnLaunch& l) {
    constexpr int bytes = AttnSharedBytes<kH, kD>();
    AllowSharedBytes<AttnMmaKernel<kH, kD>>(bytes);
    AttnMmaKernel<kH, kD><<<l.grid, kAttnWarps * 32, bytes, l.stream>>>(
        l.q, l.k, l.v, l.a, l.chunk, l.qscale, l.partial, l.counters, l.out);
  }
};

// Launcher<kH, kD>::Run(l) for a block's query heads kH (HeadsPerBlock of the group) and the
// head_dim kD (InferHeadDimOk).
template <template <int, int> class Launcher, int kH, class Launch>
void ByHeadDim(const Launch& l, int64_t head_dim) {
  switch (head_dim) {
    case 16:
      return Launcher<kH, 16>::Run(l);
    case 32:
      return Launcher<kH, 32>::Run(l);
    case 64:
      return Launcher<kH, 64>::Run(l);
    case 128:
      return Launcher<kH, 128>::Run(l);
    default:
      return Launcher<kH, 256>::Run(l);
  }
}
template <template <int, int> class Launcher, class Launch>
void ByHeads(const Launch& l, const InferAttnDims& a) {
  switch (HeadsPerBlock(a.heads / a.kv_heads)) {
    case 8:
      return ByHeadDim<Launcher, 8>(l, a.head_dim);
    case 4:
      return ByHeadDim<Launcher, 4>(l, a.head_dim);
    case 2:
      return ByHeadDim<Launcher, 2>(l, a.head_dim);
    default:
      return ByHeadDim<Launcher, 1>(l, a.head_dim);
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
  ByHeads<LaunchAttn>(l, a);
  DLB_CHECK(cudaGetLastError());
}

AttnSplit ChooseRopeAttnSplit(const InferAttnDims& a) {
  CheckDims(a);
  Require(a.new_tokens == 1, "the fused rotary append and attention takes one token a sequence");
  // The cached keys (this step's is added after them) in as many chunks as bring the blocks to
  // one a multiprocessor, at most a cluster's, at least a tile a chunk.
  const int64_t rows = AttnBlocks(a), cached = std::max<int64_t>(a.first_pos, 1);
  const int64_t want =
      std::clamp<int64_t>((kMinBlocks + rows - 1) / rows, 1,
                          std::min(kDecodeMaxSplits, (cached + kKeyTile - 1) / kKeyTile));
  AttnSplit out;
  out.chunk = ((cached + want - 1) / want + kKeyTile - 1) / kKeyTile * kKeyTile;
  out.splits = (cached + out.chunk - 1) / out.chunk;
  return out;
}

bool RopeAttentionSupported() {
  int device = 0, major = 0;
  DLB_CHECK(cudaGetDevice(&device));
  DLB_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major >= 9;
}

namespace {

struct RopeAttnLaunch : AttnGrid {
  const float *qkv, *cos, *sin;
  bf16 *k, *v, *out;
};

template <int kH, int kD>
struct LaunchRopeAttn {
  static void Run(const RopeAttnLaunch& l) {
    constexpr int bytes = RopeAttnSharedBytes<kH, kD>();
    AllowSharedBytes<RopeAttnKernel<kH, kD>>(bytes);
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = l.grid;
    cfg.blockDim = dim3(kDecodeWarps<kD> * 32);
    cfg.dynamicSmemBytes = bytes;
    cfg.stream = l.stream;
    cudaLaunchAttribute attr[2];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 1;
    attr[0].val.clusterDim.y = l.grid.y;
    attr[0].val.clusterDim.z = 1;
    attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[1].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 2;
    DLB_CHECK(cudaLaunchKernelEx(&cfg, RopeAttnKernel<kH, kD>, l.qkv, l.cos, l.sin, l.a, l.chunk,
                                 l.qscale, l.k, l.v, l.out));
  }
};

}  // namespace

void RopeAttention(const float* qkv, const float* cos, const float* sin, const InferAttnDims& a,
                   const AttnSplit& split, uint16_t* k_cache, uint16_t* v_cache, uint16_t* out,
                   cudaStream_t stream) {
  CheckDims(a);
  const int64_t blocks = AttnBlocks(a), cached = std::max<int64_t>(a.first_pos, 1);
  Require(a.new_tokens == 1 && blocks <= INT_MAX,
          "the fused rotary append and attention takes one token a sequence, at most 2^31 - 1 "
          "blocks of heads");
  Require(split.splits > 0 && split.splits <= kDecodeMaxSplits && split.chunk > 0 &&
              split.chunk % kKeyTile == 0 && split.splits * split.chunk >= cached &&
              (split.splits - 1) * split.chunk < cached,
          "fused attention: 1..8 chunks (a cluster) of a multiple of 32 cached keys, none empty, "
          "covering every one");
  Require(reinterpret_cast<uintptr_t>(k_cache) % 16 == 0 &&
              reinterpret_cast<uintptr_t>(v_cache) % 16 == 0,
          "attention: the K and V caches must be 16-byte aligned (16-byte loads)");
  Require(RopeAttentionSupported(),
          "the fused rotary append and attention needs thread-block clusters (compute capability "
          "9.0+)");
  RopeAttnLaunch l;
  l.qkv = qkv;
  l.cos = cos;
  l.sin = sin;
  l.a = a;
  l.chunk = split.chunk;
  l.qscale = float(1.0 / std::sqrt(double(a.head_dim)) / std::log(2.0));  // log2 units
  l.k = B(k_cache);
  l.v = B(v_cache);
  l.out = B(out);
  l.grid = dim3(unsigned(blocks), unsigned(split.splits));
  l.stream = stream;
  ByHeads<LaunchRopeAttn>(l, a);
  DLB_CHECK(cudaGetLastError());
}
}  // namespace dlb::cuda

// What the inference step's two decode attention kernels share (infer_attn.cu's GqaAttention,
// infer_rope_attn.cu's RopeAttention): the key tiles, the tensor-core tile of S = Q K^T and
// O += P V with its online softmax, the merge of a block's warps, and the launches' dispatch over
// heads a block and head dims. Internal to kernels/cuda.
#pragma once

#include <cuda_bf16.h>
#include <cuda_pipeline.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "kernels/cuda/check.h"
#include "kernels/cuda/infer_kernels.cuh"
#include "kernels/cuda/infer_kernels.h"

namespace dlb::cuda::infer_detail {

// Attention: warps per block, and the most query heads of one kv head a block takes.
inline constexpr int kAttnWarps = 4;
inline constexpr int kMaxHeadsPerBlock = 8;
// Key-splitting, measured on an H200 at Llama-3-8B's attention over 2048 keys (per layer at
// B 1 / 8 / 32 / 128, docs/families/infer.md): chunks of kPreferredChunk keys (four tiles a
// warp: 25 us at B 8 against 32 for 128 keys and 40 for 160, 79 us at B 32 against 87 for 544),
// unless that leaves fewer than kMinBlocks blocks (then smaller chunks, down to a tile a warp:
// 8 us at B 1 against 13 for 512) or more than kMaxSplitBlocks (then fewer chunks: the rows alone
// fill the GPU and each split adds a merge; 273 us unsplit at B 128 against 289 for 512).
inline constexpr int64_t kKeyTile = 32;
inline constexpr int64_t kMinChunk = kKeyTile * kAttnWarps;
inline constexpr int64_t kPreferredChunk = 4 * kMinChunk;
inline constexpr int64_t kMinBlocks = 132;  // one a multiprocessor of an H100 or H200
inline constexpr int64_t kMaxSplitBlocks = 1536;

// The query heads of one kv head that one attention block takes together (grouped-query: 4 for
// Llama-3-8B); a larger group is split over blocks, a group of no such size takes one head a block.
inline int HeadsPerBlock(int64_t group) {
  for (int h : {kMaxHeadsPerBlock, 4, 2})
    if (group % h == 0) return h;
  return 1;
}

// The attention's blocks a chunk of keys: a block each token's query heads of a kv head, or
// HeadsPerBlock of them.
inline int64_t AttnBlocks(const InferAttnDims& a) {
  return a.batch * a.new_tokens * a.heads / HeadsPerBlock(a.heads / a.kv_heads);
}

// The scores' scale, 1 / sqrt(head_dim), in log2 units (the kernels take exp2 of the scores).
inline float ScoreScaleLog2(int64_t head_dim) {
  return float(1.0 / std::sqrt(double(head_dim)) / std::log(2.0));
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
// each copied, awaited and attended. m, l and o as AttendTile's, set here.
template <int kD, int kW>
__device__ __forceinline__ void AttendTiles(const InferAttnDims& a, int64_t b, int64_t g,
                                            int64_t j0, int64_t k1, const bf16* kc, const bf16* vc,
                                            bf16* ks, bf16* vs, const uint32_t (&qa)[kD / 16][2],
                                            float qscale, float& m, float& l, float (&o)[kD / 8][2],
                                            int lane) {
  m = -INFINITY;
  l = 0.f;
#pragma unroll
  for (int n = 0; n < kD / 8; ++n) o[n][0] = o[n][1] = 0.f;
  for (; j0 < k1; j0 += kW * 32) {
    CopyTile<kD>(a, b, g, j0, k1, kc, vc, ks, vs, lane);
    __pipeline_commit();
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

// What every attention launch takes beside its tensors.
struct AttnGrid {
  InferAttnDims a;
  int64_t chunk;
  float qscale;
  dim3 grid;
  cudaStream_t stream;
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

}  // namespace dlb::cuda::infer_detail

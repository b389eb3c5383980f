// The decode attention of the inference step (GqaAttention in infer_kernels.h): a split-key
// tensor-core kernel in the manner of flash-decoding, and how it splits the keys.
#include <cuda_bf16.h>
#include <cuda_pipeline.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "kernels/cuda/check.h"
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
}  // namespace dlb::cuda

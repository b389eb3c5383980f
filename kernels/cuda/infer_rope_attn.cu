// The decode step's rotary append and attention in one launch (RopeAttention in
// infer_kernels.h): the split-key tensor-core kernel's tiles over the cached keys, a row's chunks
// one thread-block cluster merging in distributed shared memory.
#include <cooperative_groups.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "kernels/cuda/check.h"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/infer_attn.cuh"
#include "kernels/cuda/infer_kernels.h"

namespace dlb::cuda {

using namespace infer_detail;  // NOLINT: this file's shared helpers

namespace {

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
  l.qscale = ScoreScaleLog2(a.head_dim);
  l.k = B(k_cache);
  l.v = B(v_cache);
  l.out = B(out);
  l.grid = dim3(unsigned(blocks), unsigned(split.splits));
  l.stream = stream;
  ByHeads<LaunchRopeAttn>(l, a);
  DLB_CHECK(cudaGetLastError());
}
}  // namespace dlb::cuda

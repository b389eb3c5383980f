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
// them in distributed shared memory instead of a round trip through global memory: each block
// stores its state into the blocks that own the outputs, and one cluster barrier later each owner
// merges from its own shared memory. The launch is a programmatic dependent one: each warp starts
// the copy of its first tile of cached keys, which no kernel of the step writes, before waiting on
// the projection that wrote qkv; the next kernel may launch as this one starts. The tiles come in
// by bulk copies (the TMA unit, a row of K and of V a lane) completing on a barrier a warp: on an
// H200 at Llama-3-8B, B 1, the step took 3.658 ms in bf16 and 2.214 in fp8 against 3.722 and
// 2.278 with 16-byte asynchronous copies (one build, one command; docs/families/infer.md).
// Measured there too, each after its layer's e4m3 qkv product in a CUDA graph: 16.6 us a layer
// for both against 23.0 for the product, RopeAppend and AttnMmaKernel; with this step's key in the
// last chunk (2049 keys, chunks of 288: one warp two tiles in turn) the step was slower than with
// cuDNN's attention, hence the key added after the chunk.
// Warps a block: 8 at head dims to 128 (a block's tiles, 136 KB at 128); 4 at 256, whose tiles
// would not fit 8.
template <int kD>
constexpr int kDecodeWarps = kD <= 128 ? 8 : 4;
constexpr int64_t kDecodeMaxSplits = 8;  // a portable cluster's blocks

template <int kH, int kD>
struct RopeAttnShared {
  uint64_t bar[kDecodeWarps<kD>];  // a warp's barrier for its tiles' bulk copies
  bf16 q[kH][kD];                  // the rotated queries
  bf16 k[kD], v[kD];               // this step's key (rotated) and value, in the row's last block
  float score[kH];                 // and that key's score a head
  // What the row's chunks send this block (RopeAttnKernel's merge): chunk c's max and sum a head
  // at [c], and its weighted V at the block's share of the outputs, a chunk's share after another.
  float m[kDecodeMaxSplits][kH], l[kDecodeMaxSplits][kH];
  float acc[kH * kD + kDecodeMaxSplits];
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

// The pair (x0, x1) of a row's dims (j, j + half) rotated by (c, s) into dst, as RopeAppend
// rotates it.
__device__ __forceinline__ void Rotate(float x0, float x1, int j, int half, float c, float s,
                                       bf16* dst) {
  dst[j] = __float2bfloat16(x0 * c - x1 * s);
  dst[j + half] = __float2bfloat16(x1 * c + x0 * s);
}

// Bulk copies (the TMA unit) completing on a shared-memory barrier (PTX mbarrier): the barrier
// set up for one arrival, a thread's arrival that also awaits `bytes`, a copy of `bytes` (a
// multiple of 16, both addresses 16-byte aligned) from global to this block's shared memory, and
// the wait for the barrier's phase `phase` to complete.
__device__ __forceinline__ unsigned SharedAddr(const void* p) {
  return unsigned(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void BarInit(uint64_t* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(SharedAddr(bar)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void BarExpect(uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(SharedAddr(bar)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void BulkCopy(void* dst, const void* src, unsigned bytes,
                                         uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(SharedAddr(dst)),
      "l"(src), "r"(bytes), "r"(SharedAddr(bar))
      : "memory");
}
__device__ __forceinline__ void BarWait(uint64_t* bar, unsigned phase) {
  unsigned done = 0;
  while (!done)
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, "
        "p; }"
        : "=r"(done)
        : "r"(SharedAddr(bar)), "r"(phase)
        : "memory");
}

// CopyTile's tile by bulk copies: lane r copies row r's K and V (rows past the chunk repeat its
// last), lane 0 tells the warp's barrier their bytes.
template <int kD>
__device__ __forceinline__ void BulkCopyTile(const InferAttnDims& a, int64_t b, int64_t g,
                                             int64_t j0, int64_t k1, const bf16* kc, const bf16* vc,
                                             bf16* ks, bf16* vs, uint64_t* bar, int lane) {
  constexpr int kS = TileStride<kD>();
  constexpr unsigned kRowBytes = kD * 2;
  if (lane == 0) BarExpect(bar, 2 * 32 * kRowBytes);
  const int64_t at = KvRow(a, b, g, min(j0 + lane, k1 - 1));
  BulkCopy(ks + lane * kS, kc + at, kRowBytes, bar);
  BulkCopy(vs + lane * kS, vc + at, kRowBytes, bar);
}

// The cluster's barrier in its two halves (PTX barrier.cluster): a block's arrival, relaxed (it
// orders nothing) or releasing what its threads wrote, and its wait for every block's, acquiring
// what they released.
__device__ __forceinline__ void ClusterArriveRelaxed() {
  asm volatile("barrier.cluster.arrive.relaxed;" ::: "memory");
}
__device__ __forceinline__ void ClusterArrive() {
  asm volatile("barrier.cluster.arrive.release;" ::: "memory");
}
__device__ __forceinline__ void ClusterWait() {
  asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
}

template <int kH, int kD>
__global__ void __launch_bounds__(kDecodeWarps<kD> * 32)
    RopeAttnKernel(const float* __restrict__ qkv, const float* __restrict__ cos,
                   const float* __restrict__ sin, InferAttnDims a, int64_t chunk, float qscale,
                   bf16* kc, bf16* vc, bf16* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int kW = kDecodeWarps<kD>, kThreads = kW * 32, kS = TileStride<kD>(), kC = kD / 8,
                kN = kD / 8, kHalf = kD / 2;
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
  const int splits = int(gridDim.y);  // the cluster's blocks
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  bf16* ks = reinterpret_cast<bf16*>(dyn) + warp * 2 * 32 * kS;
  bf16* vs = ks + 32 * kS;
  // The merge writes into the other blocks' shared memory once each has started: this block's
  // arrival says so, long before the first such write waits for the others'.
  if (splits > 1) ClusterArriveRelaxed();

  const int64_t j0 = k0 + int64_t(warp) * 32;
  uint64_t* bar = &sh.bar[warp];
  if (lane == 0) BarInit(bar);
  __syncwarp();
  if (j0 < k1) BulkCopyTile<kD>(a, b, g, j0, k1, kc, vc, ks, vs, bar, lane);
  // A thread's pairs to rotate: of the block's query heads, then (the row's last block) this
  // step's key and value. cos and sin, set when the step is built and written by none of its
  // kernels, are read before the wait; every pair's rows of qkv after it, all asked for before any
  // is used (one round trip to memory, not one a pair).
  constexpr int kItems = (kH + 2) * kHalf, kPer = (kItems + kThreads - 1) / kThreads;
  float cj[kPer], sj[kPer], x0[kPer], x1[kPer];
#pragma unroll
  for (int u = 0; u < kPer; ++u) {
    const int i = int(threadIdx.x) + u * kThreads, j = i % kHalf;
    cj[u] = i < kItems ? cos[j] : 0.f;
    sj[u] = i < kItems ? sin[j] : 0.f;
  }
  LetDependentsStart();
  WaitForPrevious();

  // The queries rotated; in the row's last block, this step's key rotated and its value, both
  // appended to the caches (by the first slice of heads).
  const float* row = qkv + b * (H + 2 * G) * kD;
#pragma unroll
  for (int u = 0; u < kPer; ++u) {
    const int i = int(threadIdx.x) + u * kThreads, hh = i / kHalf, j = i % kHalf;
    const float* src = row + (hh < kH ? h0 + hh : hh == kH ? H + g : H + G + g) * kD;
    const bool used = i < kItems && (hh < kH || has_new);
    x0[u] = used ? src[j] : 0.f;
    x1[u] = used ? src[j + kHalf] : 0.f;
  }
#pragma unroll
  for (int u = 0; u < kPer; ++u) {
    const int i = int(threadIdx.x) + u * kThreads, hh = i / kHalf, j = i % kHalf;
    if (i >= kItems) continue;
    if (hh < kH) {
      Rotate(x0[u], x1[u], j, kHalf, cj[u], sj[u], sh.q[hh]);
    } else if (has_new && hh == kH) {
      Rotate(x0[u], x1[u], j, kHalf, cj[u], sj[u], sh.k);
    } else if (has_new) {
      sh.v[j] = __float2bfloat16(x0[u]);
      sh.v[j + kHalf] = __float2bfloat16(x1[u]);
    }
  }
  __syncthreads();
  if (has_new && blockIdx.x % slices == 0)
    for (int c = threadIdx.x; c < kC; c += kThreads) {
      const int64_t at = KvRow(a, b, g, pos) + c * 8;
      *reinterpret_cast<uint4*>(kc + at) = *reinterpret_cast<const uint4*>(sh.k + c * 8);
      *reinterpret_cast<uint4*>(vc + at) = *reinterpret_cast<const uint4*>(sh.v + c * 8);
    }
  uint32_t qa[kD / 16][2];
  LoadQ<kH, kD>(sh.q[min(lane / 4, kH - 1)], lane, qa);
  // The warp's tiles in turn, each awaited on its barrier (the first already in flight), attended
  // into its online softmax.
  float m = -INFINITY, l = 0.f, o[kN][2];
#pragma unroll
  for (int n = 0; n < kN; ++n) o[n][0] = o[n][1] = 0.f;
  unsigned phase = 0;
  for (int64_t j = j0; j < k1; j += kW * 32, phase ^= 1u) {
    if (j != j0) {
      // The tiles' last reads (generic) are ordered before the bulk copies' writes (async proxy).
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      BulkCopyTile<kD>(a, b, g, j, k1, kc, vc, ks, vs, bar, lane);
    }
    BarWait(bar, phase);
    AttendTile<kD>(qa, ks, vs, j, k1, qscale, m, l, o, lane);
    __syncwarp();  // the tiles are read before the next copies overwrite them
  }
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
  // The row's chunks merged in the cluster: block r of the row (its rank) owns the outputs
  // [r per, (r + 1) per) of its kH x kD. Each block stores its chunk's state for those outputs into
  // the owner's shared memory, its max and sum a head into every block's (stores ask for no
  // reply); after one barrier each owner merges its outputs from its own shared memory, the chunks
  // in rank order.
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const int per = (kH * kD + splits - 1) / splits, me = int(cluster.block_rank());
  if (splits > 1) ClusterWait();  // every block has started: its shared memory may be written
  for (int i = threadIdx.x; i < kH * kD; i += kThreads) {
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
      continue;
    }
    const int owner = i / per;
    *cluster.map_shared_rank(&sh.acc[me * per + i - owner * per], owner) = v;
    if (e == 0)
      for (int c = 0; c < splits; ++c) {
        *cluster.map_shared_rank(&sh.m[me][h], c) = mx;
        *cluster.map_shared_rank(&sh.l[me][h], c) = sum;
      }
  }
  if (splits == 1) return;
  ClusterArrive();
  ClusterWait();  // every chunk's state is here; no block reads another's shared memory after it
  for (int i = me * per + int(threadIdx.x); i < min((me + 1) * per, kH * kD); i += kThreads) {
    const int h = i / kD, e = i % kD, at = i - me * per;
    float mx = -INFINITY;
    for (int c = 0; c < splits; ++c) mx = fmaxf(mx, sh.m[c][h]);
    float sum = 0.f, v = 0.f;
    for (int c = 0; c < splits; ++c) {
      const float f = exp2f(sh.m[c][h] - mx);  // every chunk has keys
      sum += f * sh.l[c][h];
      v += f * sh.acc[c * per + at];
    }
    out[(b * H + h0 + h) * kD + e] = __float2bfloat16(v / sum);
  }
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
  int carveout = -1;
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
    cudaLaunchAttribute attr[3];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 1;
    attr[0].val.clusterDim.y = l.grid.y;
    attr[0].val.clusterDim.z = 1;
    attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[1].val.programmaticStreamSerializationAllowed = 1;
    if (l.carveout >= 0) attr[2] = SharedCarveoutAttr(l.carveout);
    cfg.attrs = attr;
    cfg.numAttrs = l.carveout >= 0 ? 3 : 2;
    DLB_CHECK(cudaLaunchKernelEx(&cfg, RopeAttnKernel<kH, kD>, l.qkv, l.cos, l.sin, l.a, l.chunk,
                                 l.qscale, l.k, l.v, l.out));
  }
};

// RopeAttnSharedBytes for a block's query heads kH and the head_dim kD, as ByHeads picks them.
template <int kH, int kD>
struct RopeAttnBytes {
  static void Run(int* bytes) { *bytes = RopeAttnSharedBytes<kH, kD>(); }
};

}  // namespace

int RopeAttentionCarveout(const InferAttnDims& a) {
  CheckDims(a);
  int bytes = 0, device = 0, per_sm = 0, reserved = 0;
  ByHeads<RopeAttnBytes>(&bytes, a);
  DLB_CHECK(cudaGetDevice(&device));
  DLB_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  DLB_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device));
  // The splits of a multiprocessor's on-chip memory the GPU offers as shared memory (KB; the CUDA
  // C++ Programming Guide's for compute capability 9.0 and 10.0, up to the device's most): a
  // carveout is a hint the driver maps to one of them, so the percent asked for is that of the
  // split itself (72 for 164 KB of 228), not of the block's bytes (62 at head_dim 128, which an
  // H200 took as a split the block does not fit: every kernel beside it then drained).
  const int need = bytes + reserved;
  for (int kb : {0, 8, 16, 32, 64, 100, 132, 164, 196, 228}) {
    const int split = kb * 1024;
    if (split >= need && split <= per_sm) return int((int64_t(split) * 100 + per_sm - 1) / per_sm);
  }
  Require(per_sm > 0 && need <= per_sm,
          "the fused attention's block does not fit a multiprocessor's shared memory");
  return 100;
}

void RopeAttention(const float* qkv, const float* cos, const float* sin, const InferAttnDims& a,
                   const AttnSplit& split, uint16_t* k_cache, uint16_t* v_cache, uint16_t* out,
                   cudaStream_t stream, int carveout) {
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
  Require(carveout == -1 || (carveout <= 100 && carveout >= RopeAttentionCarveout(a)),
          "fused attention: a shared-memory carveout of -1 (the driver's) or one that holds a "
          "block (RopeAttentionCarveout) up to 100");
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
  l.carveout = carveout;
  ByHeads<LaunchRopeAttn>(l, a);
  DLB_CHECK(cudaGetLastError());
}
}  // namespace dlb::cuda

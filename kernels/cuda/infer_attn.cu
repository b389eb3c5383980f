// The decode attention of the inference step (GqaAttention in infer_kernels.h): a split-key
// tensor-core kernel in the manner of flash-decoding, and how it splits the keys.
#include <algorithm>
#include <climits>
#include <cstdint>

#include "kernels/cuda/check.h"
#include "kernels/cuda/infer_attn.cuh"
#include "kernels/cuda/infer_kernels.h"

namespace dlb::cuda {

using namespace infer_detail;  // NOLINT: this file's shared helpers

namespace {

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
  AttendTiles<kD, kAttnWarps>(a, b, g, k0 + int64_t(warp) * 32, k1, kc, vc, ks, vs, qa, qscale, m,
                              l, o, lane);
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

}  // namespace

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

struct AttnLaunch : AttnGrid {
  const bf16 *q, *k, *v;
  float* partial;
  unsigned* counters;
  bf16* out;
};

template <int kH, int kD>
struct LaunchAttn {
  static void Run(const AttnLaunch& l) {
    constexpr int bytes = AttnSharedBytes<kH, kD>();
    AllowSharedBytes<AttnMmaKernel<kH, kD>>(bytes);
    AttnMmaKernel<kH, kD><<<l.grid, kAttnWarps * 32, bytes, l.stream>>>(
        l.q, l.k, l.v, l.a, l.chunk, l.qscale, l.partial, l.counters, l.out);
  }
};

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
  l.qscale = ScoreScaleLog2(a.head_dim);
  l.partial = partial;
  l.counters =
      reinterpret_cast<unsigned*>(partial + (AttnPartialFloats(a, split) - size_t(blocks)));
  l.out = B(out);
  l.grid = dim3(unsigned(blocks), unsigned(split.splits));
  l.stream = stream;
  ByHeads<LaunchAttn>(l, a);
  DLB_CHECK(cudaGetLastError());
}
}  // namespace dlb::cuda

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <climits>
#include <string>

#include "kernels/common/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/gemv.h"

namespace dlb::cuda {

namespace {

__device__ __forceinline__ float Lo(unsigned v) { return __uint_as_float(v << 16); }
__device__ __forceinline__ float Hi(unsigned v) { return __uint_as_float(v & 0xffff0000u); }

// One 16-byte word of a weight row times the matching bf16 of x, summed in f32: eight bf16
// weights and one word of x, or sixteen e4m3 weights and two words of x (`xr` points at x's
// words for weight word 0 of the row).
// How a word is summed: bf16 weights; e4m3 weights each widened to f32 (x bf16, read from
// global memory); e4m3 weights in f16 pairs (x staged in shared memory as scaled f16, StageX).
enum Math { kBf16Math, kE4m3F32, kE4m3F16 };

template <int kMath>
__device__ __forceinline__ float DotWord(const uint4& w, const uint4* __restrict__ xr, int c,
                                         const float* us);

template <>
__device__ __forceinline__ float DotWord<kBf16Math>(const uint4& w, const uint4* __restrict__ xr,
                                                    int c, const float*) {
  const uint4 x = __ldg(xr + c);
  const unsigned wv[4] = {w.x, w.y, w.z, w.w}, xv[4] = {x.x, x.y, x.z, x.w};
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {  // a bf16 is the top half of a float
    s = fmaf(Lo(wv[i]), Lo(xv[i]), s);
    s = fmaf(Hi(wv[i]), Hi(xv[i]), s);
  }
  return s;
}

// e4m3 widened to f32: sixteen e4m3 weights and two words of bf16 x (`xr` points at x's words
// for weight word 0 of the row).
template <>
__device__ __forceinline__ float DotWord<kE4m3F32>(const uint4& w, const uint4* __restrict__ xr,
                                                   int c, const float*) {
  const uint4 x0 = __ldg(xr + 2 * c), x1 = __ldg(xr + 2 * c + 1);
  const unsigned wv[4] = {w.x, w.y, w.z, w.w};
  const unsigned xv[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
  // Four sums, one a 32-bit word of w, so that the sixteen products are not one chain.
  float s[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    // Four e4m3 bytes: two pairs through the hardware's fp8x2 -> f16x2 conversion.
    const __half2 lo(__nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(wv[i] & 0xffffu), __NV_E4M3));
    const __half2 hi(__nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(wv[i] >> 16), __NV_E4M3));
    const float2 a = __half22float2(lo), b = __half22float2(hi);
    s[i] = a.x * Lo(xv[2 * i]);
    s[i] = fmaf(a.y, Hi(xv[2 * i]), s[i]);
    s[i] = fmaf(b.x, Lo(xv[2 * i + 1]), s[i]);
    s[i] = fmaf(b.y, Hi(xv[2 * i + 1]), s[i]);
  }
  return (s[0] + s[1]) + (s[2] + s[3]);
}

// The 512 elements of x a segment: 32 16-byte words of e4m3 weights, a warp's load of one row.
constexpr int kSegment = 512;

// e4m3: x's words are f16 pairs in shared memory, each segment scaled by StageX (us[g]: segment
// g's 2^-s). Each 32-bit word of w is two e4m3 pairs, each widened to an f16 pair by one
// conversion and multiplied into x's pair by one f16x2 fused multiply-add: two chains of four,
// added pairwise, so that each half of the pair sums 8 of the 16 products in f16; the pair is
// widened and its sum, times 2^-s, is what the f32 sums add. About 22 instructions a 16-byte word
// where widening each weight to f32 took about 52 at two rows a warp. StageX's scale keeps every
// partial sum under f16's largest (8 x 448 x 16 < 65504).
template <>
__device__ __forceinline__ float DotWord<kE4m3F16>(const uint4& w, const uint4* __restrict__ xr,
                                                   int c, const float* us) {
  const uint4 x0 = xr[2 * c], x1 = xr[2 * c + 1];
  const unsigned wv[4] = {w.x, w.y, w.z, w.w};
  const unsigned xv[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
  __half2 s0, s1;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const __half2 lo(__nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(wv[i] & 0xffffu), __NV_E4M3));
    const __half2 hi(__nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(wv[i] >> 16), __NV_E4M3));
    const __half2 a = *reinterpret_cast<const __half2*>(&xv[2 * i]);
    const __half2 b = *reinterpret_cast<const __half2*>(&xv[2 * i + 1]);
    if (i == 0) {
      s0 = __hmul2(lo, a);
      s1 = __hmul2(hi, b);
    } else {
      s0 = __hfma2(lo, a, s0);
      s1 = __hfma2(hi, b, s1);
    }
  }
  const float2 f = __half22float2(__hadd2(s0, s1));
  return (f.x + f.y) * us[c / (kSegment / 16)];
}

// e4m3's x: its M rows (kx8 16-byte words of bf16 a row) into shared memory (xs, the same layout)
// as f16, each segment of kSegment elements times 2^s, the power of two that puts the segment's
// largest magnitude in [8, 16); us[i * segments + g] = 2^-s for row i's segment g (s clamped to
// [-126, 126]: a segment of zeros keeps 2^126, one not finite 1). A warp a segment in turn, two
// segments' loads asked for before either is converted; the largest magnitude is the largest of
// the bf16 bits without their sign (the order of finite magnitudes), through one max a warp, so
// no warp waits for another until the block's one barrier at the end. Measured against one scale
// a row (the block's largest magnitude, two passes over x and two barriers) on an H200, each
// Llama-3-8B product 32 times over in a CUDA graph: qkv 6.87 us against 6.99, o 5.70 against
// 5.93, gate/up 27.43 against 27.96, down 15.99 against 16.48. Every thread of the block calls it.
template <int M, int kBlockWarps>
__device__ __forceinline__ void StageX(const uint4* __restrict__ x, uint4* xs, float* us,
                                       int kx8) {
  const int lane = int(threadIdx.x % 32), warp = int(threadIdx.x / 32);
  const int segments = (kx8 * 8 + kSegment - 1) / kSegment, total = M * segments;
  constexpr int kWords = kSegment / 8 / 32;  // a lane's 16-byte words of a segment
  constexpr int kBatch = 2;                  // segments a warp loads before converting any
  for (int g0 = warp; g0 < total; g0 += kBatch * kBlockWarps) {
    uint4 v[kBatch][kWords];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int g = g0 + b * kBlockWarps, i = g / segments, at = (g % segments) * (kSegment / 8);
#pragma unroll
      for (int h = 0; h < kWords; ++h) {
        const int p = at + 32 * h + lane;
        v[b][h] = g < total && p < kx8 ? __ldg(x + size_t(i) * kx8 + p) : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int g = g0 + b * kBlockWarps, i = g / segments, at = (g % segments) * (kSegment / 8);
      if (g >= total) break;
      unsigned m2 = 0;
#pragma unroll
      for (int h = 0; h < kWords; ++h)
        m2 = __vmaxu2(m2, __vmaxu2(__vmaxu2(v[b][h].x & 0x7fff7fffu, v[b][h].y & 0x7fff7fffu),
                                   __vmaxu2(v[b][h].z & 0x7fff7fffu, v[b][h].w & 0x7fff7fffu)));
      const unsigned m = __reduce_max_sync(0xffffffffu, max(m2 & 0xffffu, m2 >> 16));
      const int e = int(m >> 7);  // the largest magnitude is below 2^(max(e, 1) - 126)
      const int sh = e >= 255 ? 0 : min(max(130 - max(e, 1), -126), 126);
      const float scale = __int_as_float((127 + sh) << 23);
      if (lane == 0) us[g] = __int_as_float((127 - sh) << 23);
#pragma unroll
      for (int h = 0; h < kWords; ++h) {
        const int p = at + 32 * h + lane;
        const unsigned in[4] = {v[b][h].x, v[b][h].y, v[b][h].z, v[b][h].w};
        unsigned out[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const __half2 hv = __floats2half2_rn(Lo(in[j]) * scale, Hi(in[j]) * scale);
          out[j] = *reinterpret_cast<const unsigned*>(&hv);
        }
        if (p < kx8) xs[size_t(i) * kx8 + p] = make_uint4(out[0], out[1], out[2], out[3]);
      }
    }
  }
  __syncthreads();
}

// The pieces of a fused norm's sums a thread loads before streaming its rows, so that their
// latency hides behind the weights'; a row of more pieces than the block's threads x
// kPrefetchParts loads the rest after.
constexpr int kPrefetchParts = 4;

// One round of a warp's loads: U 16-byte words of each of its R rows (wr), from word c on, 32 apart.
template <int R, int U>
__device__ __forceinline__ void LoadRound(uint4 (&wv)[R][U], const uint4* const (&wr)[R], int c) {
#pragma unroll
  for (int u = 0; u < U; ++u)
#pragma unroll
    for (int r = 0; r < R; ++r) wv[r][u] = __ldcs(wr[r] + c + 32 * u);
}

// That round times each of x's M rows (xw words apart), into the warp's sums.
template <int kMath, int M, int R, int U>
__device__ __forceinline__ void AddRound(float (&acc)[R][M], const uint4 (&wv)[R][U],
                                         const uint4* __restrict__ x, int xw, const float* us,
                                         int segments, int c) {
#pragma unroll
  for (int u = 0; u < U; ++u)
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int i = 0; i < M; ++i)
        acc[r][i] += DotWord<kMath>(wv[r][u], x + size_t(i) * xw, c + 32 * u, us + i * segments);
}

// What a kernel's epilogue does: fixed when it is compiled (each of a decode step's products has
// one kind, and a kernel without the other kinds' code has fewer values live across its loads),
// or read from the fusion when it runs (kAnyFusion). Measured on an H200, Llama-3-8B's decode step
// at B 1 in three interleaved rounds: e4m3 2.440-2.441 ms against 2.466-2.468 with every kernel
// reading the kind at run time; bf16 3.942-3.951 against 3.938-3.980.
enum FusionKind { kAnyFusion, kNoFusion, kNormIn, kNormInSwiGlu, kResidualOut };

template <int kF>
__device__ __forceinline__ bool HasNorm(const GemvFusion& f) {
  if constexpr (kF == kAnyFusion) return f.norm_parts != nullptr;
  return kF == kNormIn || kF == kNormInSwiGlu;
}
template <int kF>
__device__ __forceinline__ bool HasSwiGlu(const GemvFusion& f) {
  if constexpr (kF == kAnyFusion) return f.act != nullptr;
  return kF == kNormInSwiGlu;
}
template <int kF>
__device__ __forceinline__ bool HasResidual(const GemvFusion& f) {
  if constexpr (kF == kAnyFusion) return f.out_parts != nullptr;
  return kF == kResidualOut;
}

// The kind a fusion's fields name; kAnyFusion for a mix a step does not use.
FusionKind KindOf(const GemvFusion& f) {
  const bool norm = f.norm_parts != nullptr, act = f.act != nullptr, res = f.out_parts != nullptr;
  if (!norm && !act && !res) return kNoFusion;
  if (norm && !act && !res) return kNormIn;
  if (norm && act && !res) return kNormInSwiGlu;
  if (!norm && !act && res) return kResidualOut;
  return kAnyFusion;
}

// A block of RB rows (GemvLayout): KS x RB / R warps, warp w taking rows
// blockIdx.x * RB + (w % (RB / R)) R + r (r < R) over slice w / (RB / R) of their kw 16-byte words
// (KS slices a row, each the words [s kw / KS, (s + 1) kw / KS)), read in rounds of U 16-byte
// loads a lane, x's rows k / 8 words apart. A row's slices are summed in shared memory by its
// slice-0 warp, in slice order. The fused epilogues (GemvFusion, of kind kF) run after the sums.
template <int kMath, int M, int R, int RB, int U, int kMinBlocks, int kF, int KS, bool kPipe>
__global__ void __launch_bounds__(32 * KS * RB / R, kMinBlocks)
    GemvKernel(const uint4* __restrict__ x, const uint4* __restrict__ w, float w_scale,
               float* __restrict__ y, int n, int k, int kw, bool accumulate, GemvFusion f) {
  constexpr int kRowWarps = RB / R, kBlockWarps = KS * kRowWarps, kBlockThreads = 32 * kBlockWarps,
                kUnroll = U, kRed = RB > kBlockWarps ? RB : kBlockWarps;
  static_assert(RB % R == 0 && RB % 2 == 0 && M * RB / 2 <= kBlockThreads && KS >= 1,
                "a block's rows");
  __shared__ float red[kRed][M];
  __shared__ float inv[M];
  __shared__ float slice_sum[KS > 1 ? KS - 1 : 1][RB][M];
  const int warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
  const int rw = warp % kRowWarps, slice = warp / kRowWarps;
  const bool owner = KS == 1 || slice == 0;  // the warp that ends with its rows' whole sums
  const int row0 = int(blockIdx.x) * RB + rw * R;  // the warp's first row
  const int c_end = KS == 1 ? kw : int(int64_t(slice + 1) * kw / KS);
  const int xw = k / 8;
  // e4m3: x's rows as scaled f16 (StageX), M x k / 8 words, then their segments' unscales.
  extern __shared__ uint4 x16[];
  const int segments = (k + kSegment - 1) / kSegment;
  float* const us = reinterpret_cast<float*>(x16 + size_t(M) * xw);
  // Rows past n read row n - 1; their sums are never written.
  const uint4* wr[R];
#pragma unroll
  for (int r = 0; r < R; ++r) wr[r] = w + size_t(min(row0 + r, n - 1)) * size_t(kw);
  const bool live = R > 1 || row0 < n;
  int c = (KS == 1 ? 0 : int(int64_t(slice) * kw / KS)) + lane;
  // Launched as a programmatic dependent (LaunchAt): the first round of weights, which no kernel
  // writes, is loaded before waiting for the previous kernel to finish; what it wrote (x, the
  // norm's pieces, y) is read and written only after. The next product may launch at once: its
  // blocks load their first weights while this one's last run.
  uint4 early[R][kUnroll];
  const bool has_early = live && c + 32 * (kUnroll - 1) < c_end;
  if (has_early) LoadRound(early, wr, c);
  LetDependentsStart();
  WaitForPrevious();
  float part[M][kPrefetchParts];
  if (HasNorm<kF>(f))
#pragma unroll
    for (int i = 0; i < M; ++i)
#pragma unroll
      for (int u = 0; u < kPrefetchParts; ++u) {
        const int p = int(threadIdx.x) + u * kBlockThreads;
        part[i][u] = p < f.norm_part_count ? f.norm_parts[i * f.norm_part_count + p] : 0.f;
      }
  // After the norm's pieces are asked for, so that their latency hides behind the staging too.
  if constexpr (kMath == kE4m3F16) StageX<M, kBlockWarps>(x, x16, us, xw);
  const uint4* const xin = kMath == kE4m3F16 ? x16 : x;  // where the sums read x
  float acc[R][M];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int i = 0; i < M; ++i) acc[r][i] = 0.f;
  // The weights are read once: streaming loads (evict first) keep x, which every warp reads, in
  // the caches.
  // One row a warp: a warp wholly past n reads nothing. More: every warp reads (with that branch
  // the e4m3 product at two rows a warp measured no faster than at one, 2371 us).
  if (kPipe && has_early) {
    // Each round's loads asked for before the round before it is summed: two buffers in turn
    // (named, not indexed, so that both stay in registers). A round: load the next into `ahead`
    // if there is one, sum `now`; whether there was.
    uint4 next[R][kUnroll];
    const auto round = [&](uint4 (&now)[R][kUnroll], uint4 (&ahead)[R][kUnroll]) {
      const bool more = c + 32 * kUnroll + 32 * (kUnroll - 1) < c_end;
      if (more) LoadRound(ahead, wr, c + 32 * kUnroll);
      AddRound<kMath>(acc, now, xin, xw, us, segments, c);
      c += 32 * kUnroll;
      return more;
    };
    while (round(early, next) && round(next, early)) {
    }
  } else if (has_early) {
    AddRound<kMath>(acc, early, xin, xw, us, segments, c);
    c += 32 * kUnroll;
  }
  if (live) {
    if (!kPipe)
      for (; c + 32 * (kUnroll - 1) < c_end; c += 32 * kUnroll) {
        uint4 wv[R][kUnroll];
        LoadRound(wv, wr, c);
        AddRound<kMath>(acc, wv, xin, xw, us, segments, c);
      }
    for (; c < c_end; c += 32)
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const uint4 last = __ldcs(wr[r] + c);
#pragma unroll
        for (int i = 0; i < M; ++i)
          acc[r][i] += DotWord<kMath>(last, xin + size_t(i) * xw, c, us + i * segments);
      }
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int i = 0; i < M; ++i) {
#pragma unroll
      for (int off = 16; off > 0; off /= 2)
        acc[r][i] += __shfl_xor_sync(0xffffffffu, acc[r][i], off);
      acc[r][i] *= w_scale;
    }
  if constexpr (KS > 1) {
    if (!owner && lane == 0)
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int i = 0; i < M; ++i) slice_sum[slice - 1][rw * R + r][i] = acc[r][i];
    __syncthreads();
    if (owner)
#pragma unroll
      for (int s = 0; s < KS - 1; ++s)
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
          for (int i = 0; i < M; ++i) acc[r][i] += slice_sum[s][rw * R + r][i];
  }
  if (HasNorm<kF>(f)) {
    // The norm's sum of squares, its pieces added in the same order every time.
#pragma unroll
    for (int i = 0; i < M; ++i) {
      float s = 0.f;
#pragma unroll
      for (int u = 0; u < kPrefetchParts; ++u) s += part[i][u];
      for (int p = int(threadIdx.x) + kPrefetchParts * kBlockThreads; p < f.norm_part_count;
           p += kBlockThreads)
        s += f.norm_parts[i * f.norm_part_count + p];
#pragma unroll
      for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
      if (lane == 0) red[warp][i] = s;
    }
    __syncthreads();
    if (threadIdx.x < M) {
      float s = 0.f;
#pragma unroll
      for (int w8 = 0; w8 < kBlockWarps; ++w8) s += red[w8][threadIdx.x];
      inv[threadIdx.x] = rsqrtf(s / float(k) + f.eps);
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int i = 0; i < M; ++i) acc[r][i] *= inv[i];
  }

  if (HasSwiGlu<kF>(f)) {
    // Rows 2p and 2p + 1 of the block are one SwiGLU unit's gate and up.
    if (owner && lane == 0)
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int i = 0; i < M; ++i) red[rw * R + r][i] = acc[r][i];
    __syncthreads();
    const int p = int(threadIdx.x) % (RB / 2), i = int(threadIdx.x) / (RB / 2);
    const int unit = int(blockIdx.x) * (RB / 2) + p, units = n / 2;
    if (i < M && unit < units) {
      const float g = red[2 * p][i], u = red[2 * p + 1][i];
      reinterpret_cast<__nv_bfloat16*>(f.act)[size_t(i) * units + unit] =
          __float2bfloat16(g / (1.f + __expf(-g)) * u);
    }
    return;
  }
  if (!HasResidual<kF>(f)) {
    if (owner && lane == 0)
#pragma unroll
      for (int r = 0; r < R; ++r)
        if (row0 + r < n)
#pragma unroll
          for (int i = 0; i < M; ++i) {
            float* out = y + size_t(i) * size_t(n) + row0 + r;
            *out = accumulate ? *out + acc[r][i] : acc[r][i];
          }
    return;
  }
  // Residual output: y += product, the next norm's input y x gamma and y's squares, a block's
  // squares summed into its piece.
  if (owner && lane == 0)
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int row = row0 + r;
#pragma unroll
      for (int i = 0; i < M; ++i) {
        float v = 0.f;
        if (row < n) {
          float* out = y + size_t(i) * size_t(n) + row;
          v = accumulate ? *out + acc[r][i] : acc[r][i];
          *out = v;
          reinterpret_cast<__nv_bfloat16*>(f.next_in)[size_t(i) * n + row] =
              __float2bfloat16(v * f.gamma[row]);
        }
        red[rw * R + r][i] = v * v;
      }
    }
  __syncthreads();
  if (threadIdx.x < M) {
    float s = 0.f;
#pragma unroll
    for (int q = 0; q < RB; ++q) s += red[q][threadIdx.x];
    f.out_parts[threadIdx.x * gridDim.x + blockIdx.x] = s;
  }
}

// The kernel of kGemvLayouts[L] for fusion kind kF, its rows, loads and registers read from the
// table (a block a piece of GemvParts), launched as a programmatic dependent of the kernel before
// it (GemvKernel says what may run early). Measured on an H200, Llama-3-8B's decode step at B 1 in
// three interleaved rounds: bf16 4.064 ms against 4.203-4.216 without; e4m3 2.705 against
// 2.711-2.713. Triggering the next launch after a block's loads rather than at its start: bf16
// 4.101 ms.
template <bool kFp8, int M, int L, int kF>
void LaunchAt(const uint16_t* x, const void* w, float w_scale, float* y, int n, int k,
              bool accumulate, const GemvFusion& f, cudaStream_t stream, int carveout) {
  constexpr GemvLayout l = kGemvLayouts[L];
  constexpr int kMath = !kFp8 ? kBf16Math : l.wide != 0 ? kE4m3F32 : kE4m3F16;
  constexpr auto kernel = GemvKernel<kMath, M, l.rows_per_warp, l.rows_per_block, l.loads,
                                     l.MinBlocks(), kF, l.k_split, l.pipelined != 0>;
  // e4m3's x in shared memory (StageX), and a float a segment: past the default 48 KB a block
  // needs the kernel's consent (a kernel attribute, not a stream operation: allowed while a step
  // is captured).
  const size_t x16_bytes =
      kMath == kE4m3F16 ? size_t(M) * (size_t(k) * 2 + size_t((k + kSegment - 1) / kSegment) * 4)
                        : 0;
  if (x16_bytes > 48 * 1024)
    DLB_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(x16_bytes)));
  LaunchDependent(kernel, dim3(unsigned(GemvParts(n, L))), dim3(unsigned(l.Threads())), x16_bytes,
                  carveout, stream, reinterpret_cast<const uint4*>(x),
                  reinterpret_cast<const uint4*>(w), w_scale, y, n, k, kFp8 ? k / 16 : k / 8,
                  accumulate, f);
}

// At one row of x, the kernel for the fusion's kind; at more, one that reads it at run time.
template <bool kFp8, int M, int L>
void LaunchK(const uint16_t* x, const void* w, float w_scale, float* y, int n, int k,
             bool accumulate, const GemvFusion& f, cudaStream_t stream, int carveout) {
  if constexpr (M > 1) {
    LaunchAt<kFp8, M, L, kAnyFusion>(x, w, w_scale, y, n, k, accumulate, f, stream, carveout);
  } else {
    switch (KindOf(f)) {
      case kNoFusion:
        return LaunchAt<kFp8, M, L, kNoFusion>(x, w, w_scale, y, n, k, accumulate, f, stream,
                                               carveout);
      case kNormIn:
        return LaunchAt<kFp8, M, L, kNormIn>(x, w, w_scale, y, n, k, accumulate, f, stream,
                                             carveout);
      case kNormInSwiGlu:
        return LaunchAt<kFp8, M, L, kNormInSwiGlu>(x, w, w_scale, y, n, k, accumulate, f, stream,
                                                   carveout);
      case kResidualOut:
        return LaunchAt<kFp8, M, L, kResidualOut>(x, w, w_scale, y, n, k, accumulate, f, stream,
                                                  carveout);
      default:
        return LaunchAt<kFp8, M, L, kAnyFusion>(x, w, w_scale, y, n, k, accumulate, f, stream,
                                                carveout);
    }
  }
}

// kGemvLayouts[layout], compiled in: every layout at one row of x, the format's default at more
// (Gemv allows only that one there).
template <bool kFp8, int M, int L = 0>
void LaunchM(int layout, const uint16_t* x, const void* w, float w_scale, float* y, int n, int k,
             bool accumulate, const GemvFusion& f, cudaStream_t stream, int carveout) {
  if constexpr (M > 1) {
    constexpr int kDefault = GemvDefaultLayout(kFp8 ? GemvWeights::kFp8E4m3 : GemvWeights::kBf16);
    LaunchK<kFp8, M, kDefault>(x, w, w_scale, y, n, k, accumulate, f, stream, carveout);
  } else if constexpr (L + 1 < kGemvLayoutCount) {
    if (layout == L)
      return LaunchK<kFp8, M, L>(x, w, w_scale, y, n, k, accumulate, f, stream, carveout);
    LaunchM<kFp8, M, L + 1>(layout, x, w, w_scale, y, n, k, accumulate, f, stream, carveout);
  } else {
    LaunchK<kFp8, M, L>(x, w, w_scale, y, n, k, accumulate, f, stream, carveout);
  }
}

template <bool kFp8>
void Launch(int layout, const uint16_t* x, const void* w, float w_scale, float* y, int m, int n,
            int k, bool accumulate, const GemvFusion& f, cudaStream_t stream, int carveout) {
  switch (m) {
    case 1:
      return LaunchM<kFp8, 1>(layout, x, w, w_scale, y, n, k, accumulate, f, stream, carveout);
    case 2:
      return LaunchM<kFp8, 2>(layout, x, w, w_scale, y, n, k, accumulate, f, stream, carveout);
    case 3:
      return LaunchM<kFp8, 3>(layout, x, w, w_scale, y, n, k, accumulate, f, stream, carveout);
    case 4:
      return LaunchM<kFp8, 4>(layout, x, w, w_scale, y, n, k, accumulate, f, stream, carveout);
    case 5:
      return LaunchM<kFp8, 5>(layout, x, w, w_scale, y, n, k, accumulate, f, stream, carveout);
    case 6:
      return LaunchM<kFp8, 6>(layout, x, w, w_scale, y, n, k, accumulate, f, stream, carveout);
    case 7:
      return LaunchM<kFp8, 7>(layout, x, w, w_scale, y, n, k, accumulate, f, stream, carveout);
    default:
      return LaunchM<kFp8, 8>(layout, x, w, w_scale, y, n, k, accumulate, f, stream, carveout);
  }
}

constexpr bool LayoutsFitTheirKernels() {
  for (const GemvLayout& l : kGemvLayouts)
    if (l.rows_per_block < 8 || l.rows_per_block % 2 != 0 ||
        l.rows_per_block % l.rows_per_warp != 0 || l.k_split < 1 || l.Threads() > 1024)
      return false;
  return true;
}
static_assert(LayoutsFitTheirKernels(), "GemvParts(n) bounds every layout's pieces");

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

bool GemvFits(const void* x, const void* w, const void* y, int64_t m, int64_t n, int64_t k) {
  return m >= 1 && m <= kGemvMaxRows && n >= 1 && n <= INT_MAX / 32 && k >= 8 && k % 8 == 0 &&
         k <= INT_MAX && Aligned16(x) && Aligned16(w) && (y == nullptr || Aligned16(y));
}

bool GemvFp8Fits(const void* x, const void* w, const void* y, int64_t m, int64_t n, int64_t k) {
  return GemvFits(x, w, y, m, n, k) && k % 16 == 0 && m * k * 2 <= kGemvFp8MaxStage;
}

void Gemv(const uint16_t* x, const void* w, GemvWeights weights, float w_scale, float* y, int64_t m,
          int64_t n, int64_t k, bool accumulate, const GemvFusion& f, cudaStream_t stream,
          int layout, int carveout) {
  const bool fp8 = weights == GemvWeights::kFp8E4m3;
  if (layout < 0) layout = GemvDefaultLayout(weights);
  const bool residual = f.out_parts != nullptr || f.next_in != nullptr || f.gamma != nullptr;
  const char* problem = nullptr;
  if (!(fp8 ? GemvFp8Fits(x, w, y, m, n, k) : GemvFits(x, w, y, m, n, k)))
    problem = fp8 ? "needs 1 <= m <= 8, k a multiple of 16, m x k x 2 bytes of f16 x within "
                    "kGemvFp8MaxStage, 16-byte aligned operands"
                  : "needs 1 <= m <= 8, k a multiple of 8, 16-byte aligned operands";
  else if (residual && (f.out_parts == nullptr || f.next_in == nullptr || f.gamma == nullptr ||
                        f.act != nullptr))
    problem = "a residual output needs gamma, next_in and out_parts, and no SwiGLU";
  else if (f.norm_parts != nullptr && f.norm_part_count <= 0)
    problem = "a fused norm needs its pieces' count";
  else if (f.act != nullptr && n % 2 != 0)
    problem = "a SwiGLU output needs gate and up rows in pairs (n even)";
  else if (f.act == nullptr && y == nullptr)
    problem = "needs y unless it writes a SwiGLU output";
  else if (layout >= kGemvLayoutCount || (m > 1 && layout != GemvDefaultLayout(weights)))
    problem = "takes any of kGemvLayouts at one row of x, only its format's default at more";
  else if (carveout < -1 || carveout > 100)
    problem = "a shared-memory carveout is a percentage (0-100), or -1 for the driver's choice";
  if (problem != nullptr)
    throw Error(std::string(fp8 ? "GemvFp8E4m3" : "GemvBf16") + ": m " + std::to_string(m) +
                ", n " + std::to_string(n) + ", k " + std::to_string(k) + ", layout " +
                std::to_string(layout) + ": " + problem);
  if (fp8)
    Launch<true>(layout, x, w, w_scale, y, int(m), int(n), int(k), accumulate, f, stream, carveout);
  else
    Launch<false>(layout, x, w, w_scale, y, int(m), int(n), int(k), accumulate, f, stream,
                  carveout);
  DLB_CHECK(cudaGetLastError());
}

void GemvBf16(const uint16_t* x, const uint16_t* w, float* y, int64_t m, int64_t n, int64_t k,
              bool accumulate, cudaStream_t stream) {
  Gemv(x, w, GemvWeights::kBf16, 1.f, y, m, n, k, accumulate, {}, stream);
}

void GemvFp8E4m3(const uint16_t* x, const uint8_t* w, float w_scale, float* y, int64_t m, int64_t n,
                 int64_t k, bool accumulate, cudaStream_t stream) {
  Gemv(x, w, GemvWeights::kFp8E4m3, w_scale, y, m, n, k, accumulate, {}, stream);
}

}  // namespace dlb::cuda

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <climits>
#include <string>

#include "kernels/common/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/gemv.h"

namespace dlb::cuda {

namespace {

constexpr int kThreads = 256;  // 8 warps a block, a row of w each
constexpr int kUnroll = 4;     // 16-byte loads of w in flight per lane

// The eight bf16 of `w` times the eight of `x`, summed in f32 (a bf16 is the top half of a float).
__device__ __forceinline__ float Dot8(const uint4& w, const uint4& x) {
  const unsigned wv[4] = {w.x, w.y, w.z, w.w};
  const unsigned xv[4] = {x.x, x.y, x.z, x.w};
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    s = fmaf(__uint_as_float(wv[i] << 16), __uint_as_float(xv[i] << 16), s);
    s = fmaf(__uint_as_float(wv[i] & 0xffff0000u), __uint_as_float(xv[i] & 0xffff0000u), s);
  }
  return s;
}

template <int M>
__global__ void __launch_bounds__(kThreads)
    GemvKernel(const uint4* __restrict__ x, const uint4* __restrict__ w, float* __restrict__ y,
               int n, int k8, bool accumulate) {
  const int row = int((blockIdx.x * size_t(kThreads) + threadIdx.x) / 32);
  const int lane = int(threadIdx.x % 32);
  if (row >= n) return;
  const uint4* wr = w + size_t(row) * size_t(k8);
  float acc[M];
#pragma unroll
  for (int i = 0; i < M; ++i) acc[i] = 0.f;
  int c = lane;
  // The weights are read once: streaming loads (evict first) keep x, which every warp reads, in
  // the caches.
  for (; c + 32 * (kUnroll - 1) < k8; c += 32 * kUnroll) {
    uint4 wv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) wv[u] = __ldcs(wr + c + 32 * u);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int i = 0; i < M; ++i) acc[i] += Dot8(wv[u], __ldg(x + size_t(i) * k8 + c + 32 * u));
  }
  for (; c < k8; c += 32) {
    const uint4 wv = __ldcs(wr + c);
#pragma unroll
    for (int i = 0; i < M; ++i) acc[i] += Dot8(wv, __ldg(x + size_t(i) * k8 + c));
  }
#pragma unroll
  for (int i = 0; i < M; ++i)
#pragma unroll
    for (int off = 16; off > 0; off /= 2) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], off);
  if (lane == 0) {
#pragma unroll
    for (int i = 0; i < M; ++i) {
      float* out = y + size_t(i) * size_t(n) + row;
      *out = accumulate ? *out + acc[i] : acc[i];
    }
  }
}

// Sixteen e4m3 weights (one 16-byte load) times sixteen bf16 of x (two), summed in f32.
__device__ __forceinline__ float Dot16Fp8(const uint4& w, const uint4& x0, const uint4& x1) {
  const unsigned wv[4] = {w.x, w.y, w.z, w.w};
  const uint4 xs[2] = {x0, x1};
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint4& xq = xs[i / 2];
    const unsigned xa = (i % 2 == 0) ? xq.x : xq.z, xb = (i % 2 == 0) ? xq.y : xq.w;
    // Four e4m3 bytes: two pairs through the hardware's fp8x2 -> f16x2 conversion.
    const __half2 lo(__nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(wv[i] & 0xffffu), __NV_E4M3));
    const __half2 hi(__nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(wv[i] >> 16), __NV_E4M3));
    const float2 a = __half22float2(lo), b = __half22float2(hi);
    s = fmaf(a.x, __uint_as_float(xa << 16), s);
    s = fmaf(a.y, __uint_as_float(xa & 0xffff0000u), s);
    s = fmaf(b.x, __uint_as_float(xb << 16), s);
    s = fmaf(b.y, __uint_as_float(xb & 0xffff0000u), s);
  }
  return s;
}

template <int M>
__global__ void __launch_bounds__(kThreads)
    GemvFp8Kernel(const uint4* __restrict__ x, const uint4* __restrict__ w, float w_scale,
                  float* __restrict__ y, int n, int k16, bool accumulate) {
  const int row = int((blockIdx.x * size_t(kThreads) + threadIdx.x) / 32);
  const int lane = int(threadIdx.x % 32);
  if (row >= n) return;
  const uint4* wr = w + size_t(row) * size_t(k16);
  float acc[M];
#pragma unroll
  for (int i = 0; i < M; ++i) acc[i] = 0.f;
  int c = lane;
  for (; c + 32 * (kUnroll - 1) < k16; c += 32 * kUnroll) {
    uint4 wv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) wv[u] = __ldcs(wr + c + 32 * u);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int i = 0; i < M; ++i) {
        const uint4* xr = x + size_t(i) * 2 * k16 + 2 * (c + 32 * u);
        acc[i] += Dot16Fp8(wv[u], __ldg(xr), __ldg(xr + 1));
      }
  }
  for (; c < k16; c += 32) {
    const uint4 wv = __ldcs(wr + c);
#pragma unroll
    for (int i = 0; i < M; ++i) {
      const uint4* xr = x + size_t(i) * 2 * k16 + 2 * c;
      acc[i] += Dot16Fp8(wv, __ldg(xr), __ldg(xr + 1));
    }
  }
#pragma unroll
  for (int i = 0; i < M; ++i)
#pragma unroll
    for (int off = 16; off > 0; off /= 2) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], off);
  if (lane == 0) {
#pragma unroll
    for (int i = 0; i < M; ++i) {
      float* out = y + size_t(i) * size_t(n) + row;
      *out = accumulate ? *out + w_scale * acc[i] : w_scale * acc[i];
    }
  }
}

template <int M>
void LaunchFp8(const uint16_t* x, const uint8_t* w, float w_scale, float* y, int n, int k,
               bool accumulate, cudaStream_t stream) {
  const int blocks = int((int64_t(n) * 32 + kThreads - 1) / kThreads);
  GemvFp8Kernel<M><<<blocks, kThreads, 0, stream>>>(reinterpret_cast<const uint4*>(x),
                                                    reinterpret_cast<const uint4*>(w), w_scale, y,
                                                    n, k / 16, accumulate);
}

template <int M>
void Launch(const uint16_t* x, const uint16_t* w, float* y, int n, int k, bool accumulate,
            cudaStream_t stream) {
  const int blocks = int((int64_t(n) * 32 + kThreads - 1) / kThreads);
  GemvKernel<M><<<blocks, kThreads, 0, stream>>>(reinterpret_cast<const uint4*>(x),
                                                 reinterpret_cast<const uint4*>(w), y, n, k / 8,
                                                 accumulate);
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

bool GemvFits(const void* x, const void* w, const void* y, int64_t m, int64_t n, int64_t k) {
  return m >= 1 && m <= kGemvMaxRows && n >= 1 && n <= INT_MAX / 32 && k >= 8 && k % 8 == 0 &&
         k <= INT_MAX && Aligned16(x) && Aligned16(w) && Aligned16(y);
}

void GemvBf16(const uint16_t* x, const uint16_t* w, float* y, int64_t m, int64_t n, int64_t k,
              bool accumulate, cudaStream_t stream) {
  if (!GemvFits(x, w, y, m, n, k))
    throw Error("GemvBf16: m " + std::to_string(m) + ", n " + std::to_string(n) + ", k " +
                std::to_string(k) +
                ": needs 1 <= m <= 8, k a multiple of 8, 16-byte aligned "
                "operands");
  const int ni = int(n), ki = int(k);
  switch (m) {
    case 1:
      Launch<1>(x, w, y, ni, ki, accumulate, stream);
      break;
    case 2:
      Launch<2>(x, w, y, ni, ki, accumulate, stream);
      break;
    case 3:
      Launch<3>(x, w, y, ni, ki, accumulate, stream);
      break;
    case 4:
      Launch<4>(x, w, y, ni, ki, accumulate, stream);
      break;
    case 5:
      Launch<5>(x, w, y, ni, ki, accumulate, stream);
      break;
    case 6:
      Launch<6>(x, w, y, ni, ki, accumulate, stream);
      break;
    case 7:
      Launch<7>(x, w, y, ni, ki, accumulate, stream);
      break;
    default:
      Launch<8>(x, w, y, ni, ki, accumulate, stream);
      break;
  }
  DLB_CHECK(cudaGetLastError());
}

bool GemvFp8Fits(const void* x, const void* w, const void* y, int64_t m, int64_t n, int64_t k) {
  return GemvFits(x, w, y, m, n, k) && k % 16 == 0;
}

void GemvFp8E4m3(const uint16_t* x, const uint8_t* w, float w_scale, float* y, int64_t m, int64_t n,
                 int64_t k, bool accumulate, cudaStream_t stream) {
  if (!GemvFp8Fits(x, w, y, m, n, k))
    throw Error("GemvFp8E4m3: m " + std::to_string(m) + ", n " + std::to_string(n) + ", k " +
                std::to_string(k) +
                ": needs 1 <= m <= 8, k a multiple of 16, 16-byte aligned "
                "operands");
  const int ni = int(n), ki = int(k);
  switch (m) {
    case 1:
      LaunchFp8<1>(x, w, w_scale, y, ni, ki, accumulate, stream);
      break;
    case 2:
      LaunchFp8<2>(x, w, w_scale, y, ni, ki, accumulate, stream);
      break;
    case 3:
      LaunchFp8<3>(x, w, w_scale, y, ni, ki, accumulate, stream);
      break;
    case 4:
      LaunchFp8<4>(x, w, w_scale, y, ni, ki, accumulate, stream);
      break;
    case 5:
      LaunchFp8<5>(x, w, w_scale, y, ni, ki, accumulate, stream);
      break;
    case 6:
      LaunchFp8<6>(x, w, w_scale, y, ni, ki, accumulate, stream);
      break;
    case 7:
      LaunchFp8<7>(x, w, w_scale, y, ni, ki, accumulate, stream);
      break;
    default:
      LaunchFp8<8>(x, w, w_scale, y, ni, ki, accumulate, stream);
      break;
  }
  DLB_CHECK(cudaGetLastError());
}

}  // namespace dlb::cuda

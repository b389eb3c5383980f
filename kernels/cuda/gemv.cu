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

}  // namespace dlb::cuda

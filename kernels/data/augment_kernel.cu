#include "kernels/cuda/check.h"
#include "kernels/data/augment_kernel.h"

namespace dlb::data {

namespace {

struct Tap {
  int i0, i1;
  float w1;
};

// AxisTaps of kernels/data/augment.cpp for one output coordinate, operation for operation (the
// _rn intrinsics keep nvcc from contracting into FMAs, which the host code does not use): the same
// taps as the host. The blend is in float here and in fixed point on the host, so a value on a
// rounding boundary may land on the other 8-bit neighbour (Verify allows one step).
__device__ __forceinline__ Tap AxisTap(int r0, int len, int out, int size, int i) {
  const double step = __ddiv_rn(double(len), double(out));
  double src = __dadd_rn(__dadd_rn(double(r0), __dmul_rn(double(i) + 0.5, step)), -0.5);
  src = fmin(fmax(src, 0.0), double(size - 1));
  Tap t;
  t.i0 = min(int(src), size - 1);
  t.i1 = min(t.i0 + 1, size - 1);
  t.w1 = __double2float_rn(__dsub_rn(src, double(t.i0)));
  return t;
}

__device__ __forceinline__ float Lerp(float a, float b, float w) {
  return __fadd_rn(a, __fmul_rn(w, __fsub_rn(b, a)));
}

// FloatToBf16 of kernels/common/dtype.cpp (round to nearest even; no NaN can occur here).
__device__ __forceinline__ uint16_t ToBf16(float f) {
  unsigned int u = __float_as_uint(f);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

constexpr int kThreads = 256;

// grid: (ceil(out * out / kThreads), samples). One thread per output pixel, three channels.
template <bool kBf16, bool kNhwc>
__global__ void __launch_bounds__(kThreads)
    CropResizeNormalize(const uint8_t* __restrict__ arena, const SampleDesc* __restrict__ descs,
                        int out, Affine aff, void* __restrict__ dst) {
  const int k = blockIdx.y;
  const int plane = out * out;
  const int idx = blockIdx.x * kThreads + threadIdx.x;
  if (idx >= plane) return;
  const SampleDesc d = descs[k];
  const int oy = idx / out, ox = idx - oy * out;
  const int sx = d.flip ? out - 1 - ox : ox;
  const Tap tx = AxisTap(d.cx, d.cw, out, d.w, sx);
  const Tap ty = AxisTap(d.cy, d.ch, out, d.h, oy);
  const size_t row = size_t(d.w) * 3;
  const uint8_t* r0 = arena + d.src + size_t(ty.i0) * row;
  const uint8_t* r1 = arena + d.src + size_t(ty.i1) * row;
  const int x0 = tx.i0 * 3, x1 = tx.i1 * 3;
#pragma unroll
  for (int c = 0; c < 3; ++c) {
    const float top = Lerp(float(__ldg(r0 + x0 + c)), float(__ldg(r0 + x1 + c)), tx.w1);
    const float bot = Lerp(float(__ldg(r1 + x0 + c)), float(__ldg(r1 + x1 + c)), tx.w1);
    const float v = Lerp(top, bot, ty.w1);
    const int u8 = int(fminf(255.0f, fmaxf(0.0f, __fadd_rn(v, 0.5f))));  // truncates, as the host
    const float y = __fadd_rn(__fmul_rn(float(u8), aff.scale[c]), aff.bias[c]);
    const size_t at = kNhwc ? (size_t(k) * plane + idx) * 3 + c : (size_t(k) * 3 + c) * plane + idx;
    if constexpr (kBf16) {
      static_cast<uint16_t*>(dst)[at] = ToBf16(y);
    } else {
      static_cast<float*>(dst)[at] = y;
    }
  }
}

template <bool kBf16, bool kNhwc>
void LaunchAugment(const uint8_t* arena, const SampleDesc* descs, int n, int out, const Affine& aff,
                   void* dst, cudaStream_t stream) {
  const dim3 grid(unsigned((out * out + kThreads - 1) / kThreads), unsigned(n));
  CropResizeNormalize<kBf16, kNhwc><<<grid, kThreads, 0, stream>>>(arena, descs, out, aff, dst);
  DLB_CHECK(cudaGetLastError());
}

}  // namespace

Affine AffineOf(const Stats& st) {
  Affine a;
  for (int c = 0; c < 3; ++c) {
    a.scale[c] = 1.0f / (255.0f * st.std[c]);
    a.bias[c] = -st.mean[c] / st.std[c];
  }
  return a;
}

void LaunchCropResizeNormalize(const uint8_t* arena, const SampleDesc* descs, int n, int out,
                               const Affine& aff, bool bf16, bool nhwc, void* dst,
                               cudaStream_t stream) {
  if (bf16) {
    nhwc ? LaunchAugment<true, true>(arena, descs, n, out, aff, dst, stream)
         : LaunchAugment<true, false>(arena, descs, n, out, aff, dst, stream);
  } else {
    nhwc ? LaunchAugment<false, true>(arena, descs, n, out, aff, dst, stream)
         : LaunchAugment<false, false>(arena, descs, n, out, aff, dst, stream);
  }
}

}  // namespace dlb::data

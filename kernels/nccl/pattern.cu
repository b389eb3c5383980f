#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/cuda/check.h"
#include "kernels/nccl/pattern.h"
#include "kernels/nccl/pattern_kernels.h"

namespace dlb::nccl {

namespace {

constexpr int kThreads = 256;

unsigned Blocks(int64_t n) {
  return unsigned(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 8192));
}

template <class T>
__device__ T FromFloat(float v);
template <>
__device__ float FromFloat<float>(float v) {
  return v;
}
template <>
__device__ __nv_bfloat16 FromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}
template <>
__device__ __half FromFloat<__half>(float v) {
  return __float2half(v);
}

__device__ float ToFloat(float v) { return v; }
__device__ float ToFloat(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ float ToFloat(__half v) { return __half2float(v); }

template <class T>
__global__ void FillKernel(T* dst, int64_t n, int64_t first, uint64_t seed, int rank, int ranks) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = FromFloat<T>(pattern::Input(seed, rank, ranks, first + i));
}

template <class T>
__global__ void CountWrongKernel(const T* out, int64_t n, Collective c, uint64_t seed, int rank,
                                 int ranks, int64_t chunk, unsigned long long* wrong) {
  unsigned long long mine = 0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float got = ToFloat(out[i]);
    // Written so that NaN compares unequal: a never-written (poisoned) element is wrong.
    if (!(got == pattern::Expected(c, seed, rank, ranks, chunk, i))) ++mine;
  }
  for (int offset = 16; offset > 0; offset /= 2)
    mine += __shfl_down_sync(0xffffffffu, mine, offset);
  if ((threadIdx.x & 31) == 0 && mine > 0) atomicAdd(wrong, mine);
}

template <class Fn>
void ByDType(DType dt, Fn&& fn) {
  switch (dt) {
    case DType::kF32:
      fn(float{});
      return;
    case DType::kBF16:
      fn(__nv_bfloat16{});
      return;
    case DType::kF16:
      fn(__half{});
      return;
    case DType::kTF32:
    case DType::kFP8E4M3:
    case DType::kFP8E5M2:
    case DType::kInt8:
      break;
  }
  throw Error(std::string("collective data: no storage for ") + std::string(Name(dt)));
}

}  // namespace

void FillInput(void* dst, int64_t n, int64_t first, DType dt, uint64_t seed, int rank, int ranks,
               StreamRef stream) {
  if (n <= 0) return;
  ByDType(dt, [&](auto tag) {
    using T = decltype(tag);
    FillKernel<T>
        <<<Blocks(n), kThreads, 0, stream>>>(static_cast<T*>(dst), n, first, seed, rank, ranks);
    DLB_CHECK(cudaGetLastError());
  });
}

void CountWrong(const void* out, int64_t n, DType dt, Collective c, uint64_t seed, int rank,
                int ranks, int64_t chunk, unsigned long long* wrong, StreamRef stream) {
  if (n <= 0) return;
  ByDType(dt, [&](auto tag) {
    using T = decltype(tag);
    CountWrongKernel<T><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const T*>(out), n, c, seed,
                                                            rank, ranks, chunk, wrong);
    DLB_CHECK(cudaGetLastError());
  });
}

}  // namespace dlb::nccl

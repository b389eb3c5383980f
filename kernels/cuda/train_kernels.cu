#include <algorithm>

#include "kernels/cuda/check.h"
#include "kernels/cuda/train_kernels.h"

namespace dlb::cuda {

namespace {

constexpr int kThreads = 256;

unsigned Blocks(size_t n, size_t cap) {
  return static_cast<unsigned>(std::max<size_t>(1, std::min(cap, (n + kThreads - 1) / kThreads)));
}

// Thread t takes rows t, t + kThreads, ...; its losses add up in that order, then a fixed
// shared-memory tree adds the threads' sums.
__global__ void SoftmaxCrossEntropyKernel(const float* logits, const int32_t* labels, int64_t batch,
                                          int64_t classes, float* dlogits, float* loss) {
  __shared__ double partial[kThreads];
  const float inv_n = 1.0f / float(batch);
  double mine = 0;
  for (int64_t i = threadIdx.x; i < batch; i += kThreads) {
    const float* z = logits + i * classes;
    float* dz = dlogits + i * classes;
    float mx = z[0];
    for (int64_t c = 1; c < classes; ++c) mx = fmaxf(mx, z[c]);
    float sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += expf(z[c] - mx);
    const int32_t y = labels[i];
    mine += double(logf(sum)) + double(mx) - double(z[y]);
    for (int64_t c = 0; c < classes; ++c)
      dz[c] = (expf(z[c] - mx) / sum - (c == y ? 1.0f : 0.0f)) * inv_n;
  }
  partial[threadIdx.x] = mine;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) *loss = float(partial[0] / double(batch));
}

__global__ void ColumnSumsKernel(const float* m, int64_t rows, int64_t cols, float* out) {
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= cols) return;
  float acc = 0;
  for (int64_t i = 0; i < rows; ++i) acc += m[i * cols + j];
  out[j] = acc;
}

__global__ void ReluBackwardKernel(const float* act, float* grad, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    if (!(act[i] > 0)) grad[i] = 0;
}

__global__ void SgdMomentumKernel(float* param, const float* grad, float* buf, size_t n, float lr,
                                  float momentum) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float b = momentum * buf[i] + grad[i];
    buf[i] = b;
    param[i] -= lr * b;
  }
}

}  // namespace

void SoftmaxCrossEntropy(const float* logits, const int32_t* labels, int64_t batch, int64_t classes,
                         float* dlogits, float* loss, cudaStream_t stream) {
  SoftmaxCrossEntropyKernel<<<1, kThreads, 0, stream>>>(logits, labels, batch, classes, dlogits,
                                                        loss);
  DLB_CHECK(cudaGetLastError());
}

void ColumnSums(const float* m, int64_t rows, int64_t cols, float* out, cudaStream_t stream) {
  ColumnSumsKernel<<<Blocks(size_t(cols), size_t(1) << 20), kThreads, 0, stream>>>(m, rows, cols,
                                                                                   out);
  DLB_CHECK(cudaGetLastError());
}

void ReluBackward(const float* act, float* grad, size_t n, cudaStream_t stream) {
  ReluBackwardKernel<<<Blocks(n, 4096), kThreads, 0, stream>>>(act, grad, n);
  DLB_CHECK(cudaGetLastError());
}

void SgdMomentum(float* param, const float* grad, float* buf, size_t n, float lr, float momentum,
                 cudaStream_t stream) {
  SgdMomentumKernel<<<Blocks(n, 4096), kThreads, 0, stream>>>(param, grad, buf, n, lr, momentum);
  DLB_CHECK(cudaGetLastError());
}

}  // namespace dlb::cuda

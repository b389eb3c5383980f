// Small CUDA kernels of the native MLP training step (kernels/cublas/mlp.h): what cuBLASLt's
// epilogues do not cover. Each launcher checks its launch; none synchronizes, so all of them can
// be captured in a CUDA graph.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace dlb::cuda {

// Mean softmax cross-entropy of `logits` (batch x classes, row-major) against `labels`:
// dlogits = (softmax - onehot) / batch, *loss = the mean over rows. One block; the rows' losses
// are summed in a fixed order, so the loss is the same bit for bit on every run.
void SoftmaxCrossEntropy(const float* logits, const int32_t* labels, int64_t batch, int64_t classes,
                         float* dlogits, float* loss, cudaStream_t stream);

// out[j] = sum over i of m[i][j] (rows x cols, row-major), each column summed in row order: a
// bias gradient, deterministic.
void ColumnSums(const float* m, int64_t rows, int64_t cols, float* out, cudaStream_t stream);

// grad[i] = 0 where act[i] <= 0: the backward of a ReLU from its output.
void ReluBackward(const float* act, float* grad, size_t n, cudaStream_t stream);

// PyTorch's SGD with momentum over n parameters: buf = momentum * buf + grad;
// param -= lr * buf.
void SgdMomentum(float* param, const float* grad, float* buf, size_t n, float lr, float momentum,
                 cudaStream_t stream);

}  // namespace dlb::cuda

// The weight-streaming product of a decode step, y = x W^T for a few rows of x: each weight is
// read once and used by at most kGemvMaxRows tokens, so the product is bound by how fast the
// weights stream from memory, not by math. cuBLASLt's GEMMs are tiled for many rows; with one to
// eight they leave bandwidth unused (docs/families/infer.md has the figures), so the decode step
// of kernels/cublas/infer.h calls this kernel where it fits and cuBLASLt elsewhere.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dlb::cuda {

inline constexpr int64_t kGemvMaxRows = 8;

// Whether GemvBf16 takes these operands: 1 <= m <= kGemvMaxRows, n and k positive, k a multiple
// of 8 (a row is read 16 bytes at a time) and every pointer 16-byte aligned.
bool GemvFits(const void* x, const void* w, const void* y, int64_t m, int64_t n, int64_t k);

// y[i * n + j] = sum over t of x[i * k + t] * w[j * k + t] (+ y[i * n + j] when accumulate), for
// i < m and j < n: x (m x k) and w (n x k) bf16, row-major; f32 products summed in f32; y f32
// (m x n). One warp a row of w, reading it with 16-byte streaming loads, several in flight per
// lane. Checks its launch; does not synchronize (it can be captured in a CUDA graph). Throws
// dlb::Error when !GemvFits.
void GemvBf16(const uint16_t* x, const uint16_t* w, float* y, int64_t m, int64_t n, int64_t k,
              bool accumulate, cudaStream_t stream);

// The same product with e4m3 weights (w: n x k bytes) times w_scale, the activations kept bf16:
// a weight-only fp8 step reads half the bytes of a bf16 one and quantises nothing each step.
// k a multiple of 16 (a row is read 16 bytes, 16 weights, at a time); throws dlb::Error when
// !GemvFp8Fits.
bool GemvFp8Fits(const void* x, const void* w, const void* y, int64_t m, int64_t n, int64_t k);
void GemvFp8E4m3(const uint16_t* x, const uint8_t* w, float w_scale, float* y, int64_t m, int64_t n,
                 int64_t k, bool accumulate, cudaStream_t stream);

}  // namespace dlb::cuda

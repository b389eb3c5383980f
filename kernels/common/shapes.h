// Problem shapes shared by ops, references and the harness.
#pragma once

#include <cstdint>

namespace dlb {

// C[m x n] = op(A) * op(B), all row-major. A is stored m x k (k x m when ta), B is stored
// k x n (n x k when tb). Inputs are SeededValues(TensorSeed(seed, 0|1), ...) in storage order.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool ta = false, tb = false;
  double Flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

// 2-D convolution, cross-correlation as every framework computes it.
// Logical layouts, whatever the op stores: x NCHW, w K x (C/groups) x R x S, y NKPQ.
// Seeded tensors: x = TensorSeed(seed, 0), w = 1, dy = 2, each in logical order.
struct ConvShape {
  int64_t n = 1, c = 0, h = 0, w = 0;  // input
  int64_t k = 0, r = 0, s = 0;         // filters
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  int64_t groups = 1;
  int64_t P() const { return (h + 2 * pad_h - dil_h * (r - 1) - 1) / stride_h + 1; }
  int64_t Q() const { return (w + 2 * pad_w - dil_w * (s - 1) - 1) / stride_w + 1; }
  // Multiply-adds x 2, the same for forward, backward-data and backward-filter.
  double Flops() const {
    return 2.0 * double(n) * double(k) * double(P()) * double(Q()) * double(c / groups) *
           double(r) * double(s);
  }
  // Positive sizes, divisible channels, a non-empty output.
  bool Valid() const {
    return n > 0 && c > 0 && h > 0 && w > 0 && k > 0 && r > 0 && s > 0 && stride_h > 0 &&
           stride_w > 0 && pad_h >= 0 && pad_w >= 0 && dil_h > 0 && dil_w > 0 && groups > 0 &&
           c % groups == 0 && k % groups == 0 && P() > 0 && Q() > 0;
  }
};

enum class ConvPass { kFwd, kBwdData, kBwdFilter };
inline const char* Name(ConvPass p) {
  return p == ConvPass::kFwd ? "fwd" : p == ConvPass::kBwdData ? "bwd_data" : "bwd_filter";
}

}  // namespace dlb

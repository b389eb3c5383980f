// Naive float64 GEMM, the yardstick every GEMM op is verified against.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/common/fill.h"
#include "kernels/common/shapes.h"

namespace dlb {

// C = op(A) * op(B), m x n row-major, accumulated in double. `a` and `b` are in the storage order
// of shapes.h: A m x k (k x m when ta), B k x n (n x k when tb).
std::vector<double> ReferenceGemm(const GemmShape& s, const std::vector<float>& a,
                                  const std::vector<float>& b);

// One element C[i][j]: verifies a big GEMM at sampled positions in O(k) each.
double ReferenceGemmAt(const GemmShape& s, const std::vector<float>& a, const std::vector<float>& b,
                       int64_t i, int64_t j);
// The same on seeded inputs computed as they are read: a big GEMM is verified without
// materializing A and B.
double ReferenceGemmAt(const GemmShape& s, const SeededView& a, const SeededView& b, int64_t i,
                       int64_t j);

}  // namespace dlb

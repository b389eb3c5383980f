#include "kernels/reference/gemm.h"

#include "kernels/common/error.h"

namespace dlb {

namespace {

// T: std::vector<float>, or SeededView (inputs computed as they are read).
template <class T>
void CheckSizes(const GemmShape& s, const T& a, const T& b) {
  DLB_REQUIRE(s.m >= 0 && s.n >= 0 && s.k >= 0, "GEMM sizes must not be negative");
  DLB_REQUIRE(static_cast<int64_t>(a.size()) == s.m * s.k, "A must hold m*k values");
  DLB_REQUIRE(static_cast<int64_t>(b.size()) == s.k * s.n, "B must hold k*n values");
}

// op(A)[i][p] and op(B)[p][j] read straight from the storage layout.
template <class T>
double A(const GemmShape& s, const T& a, int64_t i, int64_t p) {
  return s.ta ? a[p * s.m + i] : a[i * s.k + p];
}
template <class T>
double B(const GemmShape& s, const T& b, int64_t p, int64_t j) {
  return s.tb ? b[j * s.k + p] : b[p * s.n + j];
}

template <class T>
double Dot(const GemmShape& s, const T& a, const T& b, int64_t i, int64_t j) {
  double acc = 0;
  for (int64_t p = 0; p < s.k; ++p) acc += A(s, a, i, p) * B(s, b, p, j);
  return acc;
}

}  // namespace

std::vector<double> ReferenceGemm(const GemmShape& s, const std::vector<float>& a,
                                  const std::vector<float>& b) {
  CheckSizes(s, a, b);
  std::vector<double> c(static_cast<size_t>(s.m * s.n));
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) c[i * s.n + j] = Dot(s, a, b, i, j);
  return c;
}

namespace {
template <class T>
double CheckedDot(const GemmShape& s, const T& a, const T& b, int64_t i, int64_t j) {
  CheckSizes(s, a, b);
  DLB_REQUIRE(i >= 0 && i < s.m && j >= 0 && j < s.n, "element outside C");
  return Dot(s, a, b, i, j);
}
}  // namespace

double ReferenceGemmAt(const GemmShape& s, const std::vector<float>& a, const std::vector<float>& b,
                       int64_t i, int64_t j) {
  return CheckedDot(s, a, b, i, j);
}
double ReferenceGemmAt(const GemmShape& s, const SeededView& a, const SeededView& b, int64_t i,
                       int64_t j) {
  return CheckedDot(s, a, b, i, j);
}

}  // namespace dlb

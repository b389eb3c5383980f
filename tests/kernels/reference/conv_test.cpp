#include "kernels/reference/conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/common/error.h"
#include "kernels/common/fill.h"

namespace dlb {
namespace {

ConvShape Shape(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r, int64_t s,
                int64_t stride = 1, int64_t pad = 0, int64_t dil = 1, int64_t groups = 1) {
  ConvShape sh;
  sh.n = n, sh.c = c, sh.h = h, sh.w = w, sh.k = k, sh.r = r, sh.s = s;
  sh.stride_h = sh.stride_w = stride;
  sh.pad_h = sh.pad_w = pad;
  sh.dil_h = sh.dil_w = dil;
  sh.groups = groups;
  return sh;
}

std::vector<float> Iota(int64_t n, float start) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + float(i);
  return v;
}

void ExpectEq(const std::vector<double> &got, const std::vector<double> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_DOUBLE_EQ(got[i], want[i]) << "at " << i;
}

// 3x3 input 1..9, 2x2 filter [1 2; 3 4], stride 1, no padding: worked out by
// hand.
TEST(ReferenceConv, HandComputedBasic) {
  ConvShape s = Shape(1, 1, 3, 3, 1, 2, 2);
  ASSERT_EQ(s.P(), 2);
  auto x = Iota(9, 1), w = Iota(4, 1);
  ExpectEq(ReferenceConvFwd(s, x, w), {37, 47, 67, 77});
  ExpectEq(ReferenceConvBwdData(s, {1, 0, 0, 0}, w), {1, 2, 0, 3, 4, 0, 0, 0, 0});
  ExpectEq(ReferenceConvBwdData(s, {1, 1, 1, 1}, w), {1, 3, 2, 4, 10, 6, 3, 7, 4});
  ExpectEq(ReferenceConvBwdFilter(s, x, {1, 1, 1, 1}), {12, 16, 24, 28});
  ExpectEq(ReferenceConvBwdFilter(s, x, {0, 0, 0, 1}), {5, 6, 8, 9});
}

// 4x4 input 1..16, 3x3 ones, stride 2, padding 1: windows clipped at the
// border.
TEST(ReferenceConv, HandComputedStridePadding) {
  ConvShape s = Shape(1, 1, 4, 4, 1, 3, 3, 2, 1);
  ASSERT_EQ(s.P(), 2);
  auto x = Iota(16, 1);
  std::vector<float> w(9, 1.0f);
  ExpectEq(ReferenceConvFwd(s, x, w), {14, 30, 57, 99});
  // dy = 1 at (0,0) only: dx is the clipped window rows 0..1, cols 0..1.
  ExpectEq(ReferenceConvBwdData(s, {1, 0, 0, 0}, w),
           {1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  // dy = 1 at (1,1): window rows 1..3, cols 1..3; dw[r][s] = x[1+r][1+s].
  ExpectEq(ReferenceConvBwdFilter(s, x, {0, 0, 0, 1}), {6, 7, 8, 10, 11, 12, 14, 15, 16});
}

// 5x5 input x[i][j] = 5i + j, 2x2 ones dilated by 2: y = 4 (5p + q) + 24.
TEST(ReferenceConv, HandComputedDilation) {
  ConvShape s = Shape(1, 1, 5, 5, 1, 2, 2, 1, 0, 2);
  ASSERT_EQ(s.P(), 3);
  auto y = ReferenceConvFwd(s, Iota(25, 0), std::vector<float>(4, 1.0f));
  for (int p = 0; p < 3; ++p)
    for (int q = 0; q < 3; ++q) EXPECT_DOUBLE_EQ(y[p * 3 + q], 4 * (5 * p + q) + 24);
  // dy = 1 at (0,0): the taps touch x at (0,0), (0,2), (2,0), (2,2).
  auto dx = ReferenceConvBwdData(s, {1, 0, 0, 0, 0, 0, 0, 0, 0}, {1, 2, 3, 4});
  std::vector<double> want(25, 0);
  want[0] = 1, want[2] = 2, want[10] = 3, want[12] = 4;
  ExpectEq(dx, want);
}

// Two groups, each one input channel feeding two filters of size 1x1.
TEST(ReferenceConv, HandComputedGroups) {
  ConvShape s = Shape(1, 2, 1, 2, 4, 1, 1, 1, 0, 1, 2);
  std::vector<float> x = {1, 2, 10, 20};  // c0 = [1 2], c1 = [10 20]
  std::vector<float> w = {2, 3, 5, 7};    // k0, k1 read c0; k2, k3 read c1
  ExpectEq(ReferenceConvFwd(s, x, w), {2, 4, 3, 6, 50, 100, 70, 140});
  std::vector<float> dy = {1, 0, 0, 1, 1, 1, 0, 0};
  ExpectEq(ReferenceConvBwdData(s, dy, w), {2, 3, 5, 5});
  ExpectEq(ReferenceConvBwdFilter(s, x, dy), {1, 2, 30, 0});
}

struct Tensors {
  std::vector<float> x, w, dy;
};
Tensors Seeded(const ConvShape &s, uint64_t seed) {
  return {SeededValues(TensorSeed(seed, 0), ConvXSize(s), DType::kF32),
          SeededValues(TensorSeed(seed, 1), ConvWSize(s), DType::kF32),
          SeededValues(TensorSeed(seed, 2), ConvYSize(s), DType::kF32)};
}

double Loss(const ConvShape &s, const std::vector<float> &x, const std::vector<float> &w,
            const std::vector<float> &dy) {
  auto y = ReferenceConvFwd(s, x, w);
  double l = 0;
  for (size_t i = 0; i < y.size(); ++i) l += y[i] * dy[i];
  return l;
}

// The backward passes are the gradients of L = sum(conv(x, w) * dy). Central
// differences with a step of 0.5, exact in float for inputs in [-1, 1), and L
// linear in each input: the difference quotient equals the gradient up to
// float64 rounding.
class ReferenceConvGrad : public ::testing::TestWithParam<ConvShape> {};

TEST_P(ReferenceConvGrad, BackwardMatchesFiniteDifferences) {
  const ConvShape s = GetParam();
  Tensors t = Seeded(s, 11);
  auto dx = ReferenceConvBwdData(s, t.dy, t.w);
  auto dw = ReferenceConvBwdFilter(s, t.x, t.dy);
  const float eps = 0.5f;
  for (int64_t i = 0; i < ConvXSize(s); i += 1 + ConvXSize(s) / 23) {
    auto xp = t.x, xm = t.x;
    xp[i] += eps, xm[i] -= eps;
    double fd = (Loss(s, xp, t.w, t.dy) - Loss(s, xm, t.w, t.dy)) / (2 * eps);
    EXPECT_NEAR(dx[i], fd, 1e-9 * (1 + std::abs(fd))) << "dx at " << i;
  }
  for (int64_t i = 0; i < ConvWSize(s); i += 1 + ConvWSize(s) / 23) {
    auto wp = t.w, wm = t.w;
    wp[i] += eps, wm[i] -= eps;
    double fd = (Loss(s, t.x, wp, t.dy) - Loss(s, t.x, wm, t.dy)) / (2 * eps);
    EXPECT_NEAR(dw[i], fd, 1e-9 * (1 + std::abs(fd))) << "dw at " << i;
  }
}

TEST_P(ReferenceConvGrad, SampledPositionsMatchFullTensors) {
  const ConvShape s = GetParam();
  Tensors t = Seeded(s, 5);
  auto y = ReferenceConvFwd(s, t.x, t.w);
  auto dx = ReferenceConvBwdData(s, t.dy, t.w);
  auto dw = ReferenceConvBwdFilter(s, t.x, t.dy);
  const int64_t P = s.P(), Q = s.Q(), cpg = s.c / s.groups;
  for (int64_t i = 0; i < ConvYSize(s); i += 7) {
    int64_t q = i % Q, p = i / Q % P, k = i / (P * Q) % s.k, n = i / (P * Q * s.k);
    EXPECT_EQ(ReferenceConvFwdAt(s, t.x, t.w, n, k, p, q), y[i]);
  }
  for (int64_t i = 0; i < ConvXSize(s); i += 5) {
    int64_t w = i % s.w, h = i / s.w % s.h, c = i / (s.w * s.h) % s.c, n = i / (s.w * s.h * s.c);
    EXPECT_EQ(ReferenceConvBwdDataAt(s, t.dy, t.w, n, c, h, w), dx[i]);
  }
  for (int64_t i = 0; i < ConvWSize(s); i += 3) {
    int64_t ss = i % s.s, r = i / s.s % s.r, c = i / (s.s * s.r) % cpg, k = i / (s.s * s.r * cpg);
    EXPECT_EQ(ReferenceConvBwdFilterAt(s, t.x, t.dy, k, c, r, ss), dw[i]);
  }
  EXPECT_THROW(ReferenceConvFwdAt(s, t.x, t.w, s.n, 0, 0, 0), Error);
}

// The verifier's form: the same sums on inputs computed as they are read.
TEST_P(ReferenceConvGrad, SeededViewsGiveTheSameSums) {
  const ConvShape s = GetParam();
  Tensors t = Seeded(s, 8);
  const SeededView x(TensorSeed(8, 0), ConvXSize(s), DType::kF32),
      w(TensorSeed(8, 1), ConvWSize(s), DType::kF32),
      dy(TensorSeed(8, 2), ConvYSize(s), DType::kF32);
  const int64_t P = s.P(), Q = s.Q(), cpg = s.c / s.groups;
  for (int64_t i = 0; i < ConvYSize(s); i += 11) {
    int64_t q = i % Q, p = i / Q % P, k = i / (P * Q) % s.k, n = i / (P * Q * s.k);
    EXPECT_EQ(ReferenceConvFwdAt(s, x, w, n, k, p, q), ReferenceConvFwdAt(s, t.x, t.w, n, k, p, q));
  }
  for (int64_t i = 0; i < ConvXSize(s); i += 7) {
    int64_t wp = i % s.w, h = i / s.w % s.h, c = i / (s.w * s.h) % s.c, n = i / (s.w * s.h * s.c);
    EXPECT_EQ(ReferenceConvBwdDataAt(s, dy, w, n, c, h, wp),
              ReferenceConvBwdDataAt(s, t.dy, t.w, n, c, h, wp));
  }
  for (int64_t i = 0; i < ConvWSize(s); i += 3) {
    int64_t ss = i % s.s, r = i / s.s % s.r, c = i / (s.s * s.r) % cpg, k = i / (s.s * s.r * cpg);
    EXPECT_EQ(ReferenceConvBwdFilterAt(s, x, dy, k, c, r, ss),
              ReferenceConvBwdFilterAt(s, t.x, t.dy, k, c, r, ss));
  }
  const SeededView short_x(TensorSeed(8, 0), ConvXSize(s) - 1, DType::kF32);
  EXPECT_THROW(ReferenceConvFwdAt(s, short_x, w, 0, 0, 0, 0), Error);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ReferenceConvGrad,
    ::testing::Values(Shape(2, 3, 7, 6, 4, 3, 3, 1, 1),        // same padding
                      Shape(1, 4, 9, 9, 6, 3, 3, 2, 1),        // stride 2
                      Shape(2, 2, 8, 7, 3, 3, 2, 1, 2, 2),     // dilation, uneven filter
                      Shape(1, 6, 6, 6, 4, 3, 3, 2, 0, 1, 2),  // groups, stride, no padding
                      Shape(1, 4, 5, 5, 4, 3, 3, 1, 1, 1, 4),  // depthwise
                      Shape(2, 3, 11, 11, 5, 5, 5, 3, 2)));    // 5x5 stride 3

TEST(ReferenceConv, RejectsMismatchedSizes) {
  ConvShape s = Shape(1, 1, 3, 3, 1, 2, 2);
  EXPECT_THROW(ReferenceConvFwd(s, Iota(8, 0), Iota(4, 0)), Error);
  ConvShape bad = Shape(1, 3, 3, 3, 2, 1, 1, 1, 0, 1, 2);  // 3 channels in 2 groups
  EXPECT_THROW(ReferenceConvFwd(bad, Iota(9 * 3, 0), Iota(2, 0)), Error);
}

}  // namespace
}  // namespace dlb

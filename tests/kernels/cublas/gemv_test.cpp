// The decode step's weight-streaming product (kernels/cuda/gemv.h) against a float64 product of
// the same bf16 values: every row count it takes, a k that leaves a partial stride, accumulation
// into y, and the operands it refuses. Label gpu: skipped without a device.
#include "kernels/cuda/gemv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/common/error.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/device.h"

namespace dlb::cuda {
namespace {

uint16_t Bf16Of(float f) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

double FloatOf(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::vector<uint16_t> Seeded(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<uint16_t> v(n);
  for (auto& b : v) b = Bf16Of(u(gen));
  return v;
}

// Max over outputs of |got - want| / (1 + |y0| + sum over t of |x w|): an f32 sum's error is
// relative to the magnitudes it adds (bound about k / 32 x 6e-8 here; 1e-5 leaves room).
double WorstError(int64_t m, int64_t n, int64_t k, bool accumulate) {
  const auto x = Seeded(size_t(m * k), 1), w = Seeded(size_t(n * k), 2);
  std::vector<float> y0(size_t(m * n));
  for (size_t i = 0; i < y0.size(); ++i) y0[i] = accumulate ? float(i % 7) - 3.f : 0.f;
  DeviceBuffer<uint16_t> dx(x.size()), dw(w.size());
  DeviceBuffer<float> dy(y0.size());
  DLB_CHECK(cudaMemcpy(dx.get(), x.data(), x.size() * 2, cudaMemcpyHostToDevice));
  DLB_CHECK(cudaMemcpy(dw.get(), w.data(), w.size() * 2, cudaMemcpyHostToDevice));
  DLB_CHECK(cudaMemcpy(dy.get(), y0.data(), y0.size() * 4, cudaMemcpyHostToDevice));
  GemvBf16(dx.get(), dw.get(), dy.get(), m, n, k, accumulate, nullptr);
  std::vector<float> y(y0.size());
  DLB_CHECK(cudaMemcpy(y.data(), dy.get(), y.size() * 4, cudaMemcpyDeviceToHost));
  double worst = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = y0[size_t(i * n + j)], scale = 1 + std::fabs(want);
      for (int64_t t = 0; t < k; ++t) {
        const double p = FloatOf(x[size_t(i * k + t)]) * FloatOf(w[size_t(j * k + t)]);
        want += p;
        scale += std::fabs(p);
      }
      worst = std::max(worst, std::fabs(y[size_t(i * n + j)] - want) / scale);
    }
  return worst;
}

TEST(GemvBf16, MatchesAFloat64ProductAtEveryRowCount) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  for (int64_t m = 1; m <= kGemvMaxRows; ++m) EXPECT_LT(WorstError(m, 67, 4096, false), 1e-5) << m;
}

TEST(GemvBf16, TakesAStrideItDoesNotUnrollAndAccumulates) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  EXPECT_LT(WorstError(3, 33, 8, false), 1e-5);      // one 16-byte load a row
  EXPECT_LT(WorstError(2, 130, 1032, false), 1e-5);  // 129 loads: a partial unrolled stride
  EXPECT_LT(WorstError(8, 257, 14336, true), 1e-5);  // the MLP's down projection, into y
}

// An e4m3 byte's value (1 sign, 4 exponent bits of bias 7, 3 mantissa bits; 0x7f and 0xff NaN).
double E4m3Of(uint8_t b) {
  const int e = (b >> 3) & 15, m = b & 7;
  const double mag = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1 + m / 8.0, e - 7);
  return (b & 0x80) ? -mag : mag;
}

// As WorstError, with e4m3 weights (every finite byte) times a scale.
double WorstErrorFp8(int64_t m, int64_t n, int64_t k, bool accumulate) {
  const auto x = Seeded(size_t(m * k), 3);
  std::vector<uint8_t> w(size_t(n * k));
  std::mt19937 gen(4);
  for (auto& b : w) {
    do b = uint8_t(gen());
    while ((b & 0x7f) == 0x7f);
  }
  const float scale = 0.0078125f;
  std::vector<float> y0(size_t(m * n));
  for (size_t i = 0; i < y0.size(); ++i) y0[i] = accumulate ? float(i % 5) - 2.f : 0.f;
  DeviceBuffer<uint16_t> dx(x.size());
  DeviceBuffer<uint8_t> dw(w.size());
  DeviceBuffer<float> dy(y0.size());
  DLB_CHECK(cudaMemcpy(dx.get(), x.data(), x.size() * 2, cudaMemcpyHostToDevice));
  DLB_CHECK(cudaMemcpy(dw.get(), w.data(), w.size(), cudaMemcpyHostToDevice));
  DLB_CHECK(cudaMemcpy(dy.get(), y0.data(), y0.size() * 4, cudaMemcpyHostToDevice));
  GemvFp8E4m3(dx.get(), dw.get(), scale, dy.get(), m, n, k, accumulate, nullptr);
  std::vector<float> y(y0.size());
  DLB_CHECK(cudaMemcpy(y.data(), dy.get(), y.size() * 4, cudaMemcpyDeviceToHost));
  double worst = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = y0[size_t(i * n + j)], scale_sum = 1 + std::fabs(want);
      for (int64_t t = 0; t < k; ++t) {
        const double p = FloatOf(x[size_t(i * k + t)]) * E4m3Of(w[size_t(j * k + t)]) * scale;
        want += p;
        scale_sum += std::fabs(p);
      }
      worst = std::max(worst, std::fabs(y[size_t(i * n + j)] - want) / scale_sum);
    }
  return worst;
}

TEST(GemvFp8E4m3, MatchesAFloat64ProductOfTheDecodedWeights) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  for (int64_t m : {1, 2, 5, 8}) EXPECT_LT(WorstErrorFp8(m, 67, 4096, false), 1e-5) << m;
  EXPECT_LT(WorstErrorFp8(1, 33, 16, false), 1e-5);    // one load a row
  EXPECT_LT(WorstErrorFp8(3, 130, 2064, true), 1e-5);  // a partial unrolled stride, into y
}

TEST(GemvBf16, RefusesOperandsItDoesNotTake) {
  alignas(16) static uint16_t buf[64];
  alignas(16) static float out[64];
  EXPECT_FALSE(GemvFits(buf, buf, out, 9, 4, 8));      // more rows than it unrolls
  EXPECT_FALSE(GemvFits(buf, buf, out, 1, 4, 12));     // k not a multiple of 8
  EXPECT_FALSE(GemvFits(buf + 1, buf, out, 1, 4, 8));  // x not 16-byte aligned
  EXPECT_TRUE(GemvFits(buf, buf, out, 8, 4, 8));
  EXPECT_THROW(GemvBf16(buf, buf, out, 1, 4, 12, false, nullptr), Error);
  EXPECT_FALSE(GemvFp8Fits(buf, buf, out, 1, 4, 8));  // fp8: k a multiple of 16
  EXPECT_TRUE(GemvFp8Fits(buf, buf, out, 1, 4, 16));
}

}  // namespace
}  // namespace dlb::cuda

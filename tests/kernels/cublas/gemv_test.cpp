// The decode step's weight-streaming product (kernels/cuda/gemv.h) against a float64 product of
// the same bf16 values: every row count it takes, a k that leaves a partial stride, accumulation
// into y, the fused norm, residual and SwiGLU epilogues, and the operands it refuses. Label gpu:
// skipped without a device.
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
// layout: kGemvLayouts' index, -1 the format's default.
double WorstError(int64_t m, int64_t n, int64_t k, bool accumulate, int layout = -1) {
  const auto x = Seeded(size_t(m * k), 1), w = Seeded(size_t(n * k), 2);
  std::vector<float> y0(size_t(m * n));
  for (size_t i = 0; i < y0.size(); ++i) y0[i] = accumulate ? float(i % 7) - 3.f : 0.f;
  DeviceBuffer<uint16_t> dx(x.size()), dw(w.size());
  DeviceBuffer<float> dy(y0.size());
  DLB_CHECK(cudaMemcpy(dx.get(), x.data(), x.size() * 2, cudaMemcpyHostToDevice));
  DLB_CHECK(cudaMemcpy(dw.get(), w.data(), w.size() * 2, cudaMemcpyHostToDevice));
  DLB_CHECK(cudaMemcpy(dy.get(), y0.data(), y0.size() * 4, cudaMemcpyHostToDevice));
  if (layout < 0)
    GemvBf16(dx.get(), dw.get(), dy.get(), m, n, k, accumulate, nullptr);
  else
    Gemv(dx.get(), dw.get(), GemvWeights::kBf16, 1.f, dy.get(), m, n, k, accumulate, {}, nullptr,
         layout);
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

// A double rounded to the nearest f16 (ties to even), f16's subnormals included; beyond its
// largest, infinity.
double F16Of(double v) {
  const double a = std::fabs(v);
  if (a == 0) return v;
  if (a >= 65520) return std::copysign(INFINITY, v);  // 65504 + half its ulp rounds up
  int e;
  std::frexp(a, &e);                                          // a in [2^(e-1), 2^e)
  const double ulp = std::ldexp(1.0, std::max(e, -13) - 11);  // 2^-24 below f16's normals
  return std::copysign(std::nearbyint(a / ulp) * ulp, v);
}

// The e4m3 product as the header specifies its arithmetic, every f16 rounding modelled: each
// segment of 512 elements of a row of x times 2^s (its largest magnitude into [8, 16)) rounded to
// f16; each 16 weights, two chains of four fused multiply-adds a half, the chains added pairwise;
// the halves widened and added, times the segment's 2^-s, into the row's f32 sum, times w_scale.
// model[i * n + j] is that sum in float64 (so only the f32 additions' order and rounding are left
// to differ from the kernel) and mags[i * n + j] the sum of the 16-weight pieces' magnitudes (the
// scale of those f32 roundings).
void Fp8Model(const std::vector<uint16_t>& x, const std::vector<uint8_t>& w, float w_scale,
              int64_t m, int64_t n, int64_t k, std::vector<double>& model,
              std::vector<double>& mags) {
  model.assign(size_t(m * n), 0.0);
  mags.assign(size_t(m * n), 0.0);
  const int64_t seg = 512;
  for (int64_t i = 0; i < m; ++i) {
    std::vector<double> xs(static_cast<size_t>(k)), unscale(static_cast<size_t>(k / 16));
    for (int64_t g = 0; g < k; g += seg) {
      const int64_t end = std::min(k, g + seg);
      double top = 0;
      for (int64_t t = g; t < end; ++t)
        top = std::max(top, std::fabs(FloatOf(x[size_t(i * k + t)])));
      int p = 0;
      if (top > 0) std::frexp(top, &p);  // top in [2^(p-1), 2^p): 2^(4-p) puts it in [8, 16)
      const int s = top > 0 ? std::min(std::max(4 - p, -126), 126) : 126;
      for (int64_t t = g; t < end; ++t) {
        xs[size_t(t)] = F16Of(std::ldexp(FloatOf(x[size_t(i * k + t)]), s));
        if (t % 16 == 0) unscale[size_t(t / 16)] = std::ldexp(1.0, -s) * w_scale;
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      const uint8_t* row = w.data() + size_t(j * k);
      double sum = 0, mag = 0;
      for (int64_t c = 0; c < k; c += 16) {
        double h[4];  // the halves of the two chains: weights c + 4q + l for l = 0..3
        for (int l = 0; l < 4; ++l) h[l] = F16Of(E4m3Of(row[c + l]) * xs[size_t(c + l)]);
        for (int q = 1; q < 4; ++q)
          for (int l = 0; l < 4; ++l)
            h[l] = F16Of(E4m3Of(row[c + 4 * q + l]) * xs[size_t(c + 4 * q + l)] + h[l]);
        const double piece = (F16Of(h[0] + h[2]) + F16Of(h[1] + h[3])) * unscale[size_t(c / 16)];
        sum += piece;
        mag += std::fabs(piece);
      }
      model[size_t(i * n + j)] = sum;
      mags[size_t(i * n + j)] = mag;
    }
  }
}

std::vector<uint8_t> SeededE4m3(size_t n, unsigned seed) {  // every finite byte
  std::vector<uint8_t> w(n);
  std::mt19937 gen(seed);
  for (auto& b : w) {
    do b = uint8_t(gen());
    while ((b & 0x7f) == 0x7f);
  }
  return w;
}

// As WorstError, with e4m3 weights (every finite byte) times a scale, each row of x times its
// gain (a power of two, or 0). Two measures: `model`, the largest difference from Fp8Model over
// |y0| + the pieces' magnitudes (the f32 additions' rounding alone, as WorstError's bound); and
// `exact`, the largest difference from the float64 product of the same values over
// |y0| + sum of |x w| (the f16 roundings' bound, about 5 x 2^-11). Without WorstError's 1 in the
// denominators, so that rows far below 1 are held to the same relative bounds.
struct Fp8Error {
  double model = 0, exact = 0;
};
Fp8Error WorstErrorFp8(int64_t m, int64_t n, int64_t k, bool accumulate, int layout = -1,
                       const std::vector<double>& gains = {}) {
  auto x = Seeded(size_t(m * k), 3);
  for (int64_t i = 0; i < m && !gains.empty(); ++i)
    for (int64_t t = 0; t < k; ++t) {
      uint16_t& b = x[size_t(i * k + t)];
      b = Bf16Of(float(FloatOf(b) * gains[size_t(i)]));  // a power of two: exact
    }
  const std::vector<uint8_t> w = SeededE4m3(size_t(n * k), 4);
  const float scale = 0.0078125f;
  std::vector<float> y0(size_t(m * n));
  for (size_t i = 0; i < y0.size(); ++i) y0[i] = accumulate ? float(i % 5) - 2.f : 0.f;
  DeviceBuffer<uint16_t> dx(x.size());
  DeviceBuffer<uint8_t> dw(w.size());
  DeviceBuffer<float> dy(y0.size());
  DLB_CHECK(cudaMemcpy(dx.get(), x.data(), x.size() * 2, cudaMemcpyHostToDevice));
  DLB_CHECK(cudaMemcpy(dw.get(), w.data(), w.size(), cudaMemcpyHostToDevice));
  DLB_CHECK(cudaMemcpy(dy.get(), y0.data(), y0.size() * 4, cudaMemcpyHostToDevice));
  if (layout < 0)
    GemvFp8E4m3(dx.get(), dw.get(), scale, dy.get(), m, n, k, accumulate, nullptr);
  else
    Gemv(dx.get(), dw.get(), GemvWeights::kFp8E4m3, scale, dy.get(), m, n, k, accumulate, {},
         nullptr, layout);
  std::vector<float> y(y0.size());
  DLB_CHECK(cudaMemcpy(y.data(), dy.get(), y.size() * 4, cudaMemcpyDeviceToHost));
  std::vector<double> model, mags;
  Fp8Model(x, w, scale, m, n, k, model, mags);
  Fp8Error worst;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const size_t at = size_t(i * n + j);
      double want = y0[at], sum_abs = std::fabs(want);
      for (int64_t t = 0; t < k; ++t) {
        const double p = FloatOf(x[size_t(i * k + t)]) * E4m3Of(w[size_t(j * k + t)]) * scale;
        want += p;
        sum_abs += std::fabs(p);
      }
      const double tiny = 1e-300;  // a row of zeros into y0 = 0 must give exactly 0
      worst.exact = std::max(worst.exact, std::fabs(y[at] - want) / std::max(sum_abs, tiny));
      worst.model = std::max(worst.model, std::fabs(y[at] - (y0[at] + model[at])) /
                                              std::max(std::fabs(y0[at]) + mags[at], tiny));
    }
  return worst;
}

// f16's rounding is 2^-11 relative; a product meets at most five on its way to f32.
constexpr double kF16Bound = 5 * 0x1p-11;

// Whether e4m3 at this layout (kGemvLayouts' index, -1 the default) sums in f16 pairs.
bool F16At(int layout) {
  return kGemvLayouts[layout < 0 ? GemvDefaultLayout(GemvWeights::kFp8E4m3) : layout].wide == 0;
}

// f16 pairs: Fp8Model's arithmetic within f32's rounding, the float64 product within f16's bound.
// Weights widened to f32: the float64 product within f32's rounding, as WorstError's.
void ExpectFp8(const Fp8Error& e, const char* what, int layout = -1) {
  if (F16At(layout)) {
    EXPECT_LT(e.model, 1e-5) << what;
    EXPECT_LT(e.exact, kF16Bound) << what;
  } else {
    EXPECT_LT(e.exact, 1e-5) << what;
  }
}

TEST(GemvFp8E4m3, MatchesItsF16ArithmeticAndAFloat64ProductOfTheDecodedWeights) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  for (int64_t m : {1, 2, 5, 8}) ExpectFp8(WorstErrorFp8(m, 67, 4096, false), "m 1-8");
  ExpectFp8(WorstErrorFp8(1, 33, 16, false), "one load a row");
  ExpectFp8(WorstErrorFp8(3, 130, 2064, true), "a partial unrolled stride, into y");
}

// Each segment of x is scaled on its own: rows far above and below 1, and one of zeros, sum as the
// row of ones does (their scale is a power of two, exact both ways).
TEST(GemvFp8E4m3, ScalesEachRowOfXIntoF16sRange) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  ExpectFp8(WorstErrorFp8(5, 67, 4096, true, -1, {1.0, 0x1p100, 0x1p-100, 0.0, 0x1p-20}),
            "gains 1, 2^100, 2^-100, 0, 2^-20");
  ExpectFp8(WorstErrorFp8(1, 67, 4096, false, -1, {0x1p60}), "one row, gain 2^60");
}

// x past kGemvFp8MaxStage's f16 bytes is refused, not run.
TEST(GemvFp8E4m3, RefusesAnXPastItsSharedMemory) {
  alignas(16) static uint16_t buf[64];
  alignas(16) static float out[64];
  EXPECT_TRUE(GemvFp8Fits(buf, buf, out, 1, 4, kGemvFp8MaxStage / 2));
  EXPECT_FALSE(GemvFp8Fits(buf, buf, out, 1, 4, kGemvFp8MaxStage / 2 + 16));
  EXPECT_FALSE(GemvFp8Fits(buf, buf, out, 2, 4, kGemvFp8MaxStage / 4 + 16));
  EXPECT_THROW(GemvFp8E4m3(buf, reinterpret_cast<const uint8_t*>(buf), 1.f, out, 1, 4,
                           kGemvFp8MaxStage / 2 + 16, false, nullptr),
               Error);
}

template <class T>
DeviceBuffer<T> ToDevice(const std::vector<T>& v) {
  DeviceBuffer<T> d(v.size());
  DLB_CHECK(cudaMemcpy(d.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}
template <class T>
std::vector<T> ToHost(const DeviceBuffer<T>& d) {
  std::vector<T> v(d.size());
  DLB_CHECK(cudaMemcpy(v.data(), d.get(), v.size() * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

// The fused epilogues of one decode layer against float64, for both weight formats: the norm
// folded into the input, the residual output with the next norm's input and sums of squares (one
// piece a block of the layout's rows), SwiGLU over interleaved gate and up rows, alone and after
// the norm.
void CheckFusions(GemvWeights weights, int64_t m = 2, int layout = -1) {
  const int64_t n = 96, k = 512;
  const bool fp8 = weights == GemvWeights::kFp8E4m3;
  const auto x = Seeded(size_t(m * k), 5), wb = Seeded(size_t(n * k), 6);
  const std::vector<uint8_t> w8 = SeededE4m3(size_t(n * k), 8);
  const float w_scale = fp8 ? 0.0078125f : 1.f;
  // x W^T x w_scale: in float64, or at an e4m3 layout that sums in f16 pairs that arithmetic
  // modelled (Fp8Model; the product itself is checked against float64 above), so that what is
  // compared is the epilogue.
  std::vector<double> prod(size_t(m * n)), mags;
  if (fp8 && F16At(layout)) {
    Fp8Model(x, w8, w_scale, m, n, k, prod, mags);
  } else {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t t = 0; t < k; ++t)
          s += FloatOf(x[size_t(i * k + t)]) *
               (fp8 ? E4m3Of(w8[size_t(j * k + t)]) : FloatOf(wb[size_t(j * k + t)]));
        prod[size_t(i * n + j)] = s * w_scale;
      }
  }
  DeviceBuffer<uint16_t> dx = ToDevice(x), dwb = ToDevice(wb);
  DeviceBuffer<uint8_t> dw8 = ToDevice(w8);
  const void* dw = fp8 ? static_cast<const void*>(dw8.get()) : dwb.get();
  const auto rel = [](double got, double want) {
    return std::fabs(got - want) / (1e-3 + std::fabs(want));
  };

  // Norm in: y = product x rsqrt(ss / k + eps), each row's ss in pieces (more than one thread's
  // prefetch holds: 1100 a row).
  const int parts = 1100;
  std::vector<float> pieces(size_t(m * parts));
  std::vector<double> ss(size_t(m), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int p = 0; p < parts; ++p) {
      pieces[size_t(i * parts + p)] = float((p % 7) + 1) * (i == 0 ? 0.25f : 0.03125f);
      ss[size_t(i)] += pieces[size_t(i * parts + p)];
    }
  DeviceBuffer<float> dparts = ToDevice(pieces), dy(size_t(m * n));
  GemvFusion norm;
  norm.norm_parts = dparts.get();
  norm.norm_part_count = parts;
  norm.eps = 1e-5f;
  Gemv(dx.get(), dw, weights, w_scale, dy.get(), m, n, k, false, norm, nullptr, layout);
  const std::vector<float> y = ToHost(dy);
  double worst = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      worst = std::max(worst, rel(y[size_t(i * n + j)],
                                  prod[size_t(i * n + j)] / std::sqrt(ss[size_t(i)] / k + 1e-5)));
  EXPECT_LT(worst, 1e-4);

  // Residual out: y = y0 + product, next_in = bf16(y x gamma), out_ss += sum of y^2.
  std::vector<float> y0(size_t(m * n)), gain(static_cast<size_t>(n));
  for (size_t i = 0; i < y0.size(); ++i) y0[i] = float(i % 9) - 4.f;
  for (size_t j = 0; j < gain.size(); ++j) gain[j] = 1.f + float(j % 5) / 8.f;
  const int64_t pieces_out = GemvParts(n, layout < 0 ? GemvDefaultLayout(weights) : layout);
  DeviceBuffer<float> dres = ToDevice(y0), dgamma = ToDevice(gain), dout_ss(size_t(m * pieces_out));
  DeviceBuffer<uint16_t> dnext(size_t(m * n));
  GemvFusion res;
  res.gamma = dgamma.get();
  res.next_in = dnext.get();
  res.out_parts = dout_ss.get();
  Gemv(dx.get(), dw, weights, w_scale, dres.get(), m, n, k, true, res, nullptr, layout);
  const std::vector<float> got = ToHost(dres), got_ss = ToHost(dout_ss);
  const std::vector<uint16_t> next = ToHost(dnext);
  double worst_y = 0, worst_next = 0;
  for (int64_t i = 0; i < m; ++i) {
    double want_ss = 0;
    for (int64_t j = 0; j < n; ++j) {
      const size_t at = size_t(i * n + j);
      const double want = y0[at] + prod[at];
      want_ss += want * want;
      worst_y = std::max(worst_y, rel(got[at], want));
      worst_next = std::max(worst_next, rel(FloatOf(next[at]), want * gain[size_t(j)]));
    }
    double got_sum = 0;  // one piece a block
    for (int64_t b = 0; b < pieces_out; ++b) got_sum += got_ss[size_t(i * pieces_out + b)];
    EXPECT_LT(rel(got_sum, want_ss), 1e-5) << i;
  }
  EXPECT_LT(worst_y, 1e-4);
  EXPECT_LT(worst_next, 1e-2);  // bf16's rounding, 2^-9 relative, near zero more

  // SwiGLU: rows 2f and 2f + 1 are unit f's gate and up; y is not written.
  DeviceBuffer<uint16_t> dact(size_t(m * n / 2));
  GemvFusion act;
  act.act = dact.get();
  Gemv(dx.get(), dw, weights, w_scale, nullptr, m, n, k, false, act, nullptr, layout);
  const std::vector<uint16_t> a = ToHost(dact);
  double worst_act = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t f = 0; f < n / 2; ++f) {
      const double g = prod[size_t(i * n + 2 * f)], u = prod[size_t(i * n + 2 * f + 1)];
      worst_act =
          std::max(worst_act, rel(FloatOf(a[size_t(i * n / 2 + f)]), g / (1 + std::exp(-g)) * u));
    }
  EXPECT_LT(worst_act, 1e-2);

  // Norm in and SwiGLU out together, as a step's gate/up product runs.
  GemvFusion norm_act = norm;
  norm_act.act = dact.get();
  Gemv(dx.get(), dw, weights, w_scale, nullptr, m, n, k, false, norm_act, nullptr, layout);
  const std::vector<uint16_t> na = ToHost(dact);
  double worst_norm_act = 0;
  for (int64_t i = 0; i < m; ++i) {
    const double inv = 1 / std::sqrt(ss[size_t(i)] / k + 1e-5);
    for (int64_t f = 0; f < n / 2; ++f) {
      const double g = prod[size_t(i * n + 2 * f)] * inv, u = prod[size_t(i * n + 2 * f + 1)] * inv;
      worst_norm_act = std::max(
          worst_norm_act, rel(FloatOf(na[size_t(i * n / 2 + f)]), g / (1 + std::exp(-g)) * u));
    }
  }
  EXPECT_LT(worst_norm_act, 1e-2);
}

TEST(Gemv, FusesNormResidualAndSwiGluWithBf16Weights) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  CheckFusions(GemvWeights::kBf16);
}

TEST(Gemv, FusesNormResidualAndSwiGluWithFp8Weights) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  CheckFusions(GemvWeights::kFp8E4m3);
}

// Every layout a step may choose, at one row of x: plain, into y, k in partial strides and rows
// past the last block's, then the fusions.
TEST(Gemv, EveryLayoutMatchesTheFloat64ProductAndFusesAtOneRow) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  for (int layout = 0; layout < kGemvLayoutCount; ++layout) {
    SCOPED_TRACE(layout);
    EXPECT_LT(WorstError(1, 67, 4096, false, layout), 1e-5) << layout;
    EXPECT_LT(WorstError(1, 130, 1032, true, layout), 1e-5) << layout;
    EXPECT_LT(WorstError(1, 257, 14336, true, layout), 1e-5) << layout;
    ExpectFp8(WorstErrorFp8(1, 67, 4096, false, layout), "k 4096", layout);
    ExpectFp8(WorstErrorFp8(1, 130, 2064, true, layout), "k 2064, into y", layout);
    ExpectFp8(WorstErrorFp8(1, 33, 16, false, layout), "k 16", layout);
    CheckFusions(GemvWeights::kBf16, 1, layout);
    CheckFusions(GemvWeights::kFp8E4m3, 1, layout);
  }
}

TEST(Gemv, RefusesALayoutOrCarveoutOutOfRangeOrALayoutOtherThanTheDefaultAtMoreRows) {
  alignas(16) static uint16_t buf[64];
  alignas(16) static float out[64];
  EXPECT_THROW(
      Gemv(buf, buf, GemvWeights::kBf16, 1.f, out, 1, 4, 8, false, {}, nullptr, kGemvLayoutCount),
      Error);
  EXPECT_THROW(Gemv(buf, buf, GemvWeights::kBf16, 1.f, out, 2, 4, 8, false, {}, nullptr, 3), Error);
  EXPECT_THROW(Gemv(buf, buf, GemvWeights::kFp8E4m3, 1.f, out, 2, 4, 16, false, {}, nullptr, 0),
               Error);  // e4m3's default is two rows a warp
  // A carveout is a percentage, or -1 for the driver's split.
  EXPECT_THROW(Gemv(buf, buf, GemvWeights::kBf16, 1.f, out, 1, 4, 8, false, {}, nullptr, 0, 101),
               Error);
  EXPECT_THROW(Gemv(buf, buf, GemvWeights::kBf16, 1.f, out, 1, 4, 8, false, {}, nullptr, 0, -2),
               Error);
}

// A shared-memory carveout moves only where the kernel's on-chip bytes live: every split gives the
// same bits as the driver's, at a layout of each arithmetic (f16 pairs staging x in shared memory,
// weights widened reading x through L1, bf16) and with a fused residual output.
TEST(Gemv, GivesTheSameBitsAtEverySharedMemorySplit) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  const int64_t n = 130, k = 4096;
  const auto x = Seeded(size_t(k), 5), w = Seeded(size_t(n * k), 6), gamma_bits = Seeded(n, 7);
  const std::vector<uint8_t> w8 = SeededE4m3(size_t(n * k), 8);
  std::vector<float> gamma(gamma_bits.size());
  for (size_t i = 0; i < gamma.size(); ++i) gamma[i] = float(FloatOf(gamma_bits[i]));
  DeviceBuffer<uint16_t> dx(x.size()), dw(w.size()), next{size_t(n)};
  DeviceBuffer<uint8_t> dw8(w8.size());
  DeviceBuffer<float> dy{size_t(n)}, dgamma(gamma.size()), parts{size_t(GemvParts(n))};
  DLB_CHECK(cudaMemcpy(dx.get(), x.data(), x.size() * 2, cudaMemcpyHostToDevice));
  DLB_CHECK(cudaMemcpy(dw.get(), w.data(), w.size() * 2, cudaMemcpyHostToDevice));
  DLB_CHECK(cudaMemcpy(dw8.get(), w8.data(), w8.size(), cudaMemcpyHostToDevice));
  DLB_CHECK(cudaMemcpy(dgamma.get(), gamma.data(), gamma.size() * 4, cudaMemcpyHostToDevice));
  GemvFusion residual;
  residual.gamma = dgamma.get();
  residual.next_in = next.get();
  residual.out_parts = parts.get();
  const auto run = [&](GemvWeights weights, int layout, int carveout) {
    DLB_CHECK(cudaMemset(dy.get(), 0, dy.bytes()));
    const void* wp = weights == GemvWeights::kBf16 ? static_cast<const void*>(dw.get()) : dw8.get();
    Gemv(dx.get(), wp, weights, 0.5f, dy.get(), 1, n, k, true, residual, nullptr, layout, carveout);
    std::vector<float> y(static_cast<size_t>(n));
    std::vector<uint16_t> nx(static_cast<size_t>(n));
    DLB_CHECK(cudaMemcpy(y.data(), dy.get(), y.size() * 4, cudaMemcpyDeviceToHost));
    DLB_CHECK(cudaMemcpy(nx.data(), next.get(), nx.size() * 2, cudaMemcpyDeviceToHost));
    for (uint16_t b : nx) y.push_back(float(b));
    return y;
  };
  int f16 = -1, wide = -1;
  for (int l = 0; l < kGemvLayoutCount; ++l) (kGemvLayouts[l].wide != 0 ? wide : f16) = l;
  ASSERT_GE(f16, 0);
  ASSERT_GE(wide, 0);
  const struct {
    GemvWeights weights;
    int layout;
  } cases[] = {
      {GemvWeights::kFp8E4m3, f16}, {GemvWeights::kFp8E4m3, wide}, {GemvWeights::kBf16, 0}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.layout);
    const std::vector<float> driver = run(c.weights, c.layout, -1);
    EXPECT_TRUE(std::any_of(driver.begin(), driver.end(), [](float v) { return v != 0.f; }));
    for (int carveout : {0, 64, 100})
      EXPECT_EQ(run(c.weights, c.layout, carveout), driver) << carveout;
  }
}

// A layout's register setting is the blocks an SM the compiler must fit: 65536 registers over the
// block's threads times the setting, at least one; none without a setting.
TEST(Gemv, ALayoutsRegistersAreTheBlocksAnSmTheCompilerMustFit) {
  EXPECT_EQ((GemvLayout{1, 8, 4}.MinBlocks()), 0);
  EXPECT_EQ((GemvLayout{1, 8, 4, 64}.MinBlocks()), 4);    // 256 threads x 64
  EXPECT_EQ((GemvLayout{2, 8, 4, 64}.MinBlocks()), 8);    // 128 threads x 64
  EXPECT_EQ((GemvLayout{2, 16, 4, 80}.MinBlocks()), 3);   // 256 x 80: 3.2 blocks
  EXPECT_EQ((GemvLayout{1, 16, 8, 255}.MinBlocks()), 1);  // 512 x 255: fewer than one, so one
  // Rows split over warps: a warp a slice of each of its rows.
  EXPECT_EQ((GemvLayout{2, 8, 4, 64, 2}.Threads()), 256);
  EXPECT_EQ((GemvLayout{2, 8, 4, 64, 2}.MinBlocks()), 4);   // 256 x 64
  EXPECT_EQ((GemvLayout{4, 16, 2, 64, 4}.MinBlocks()), 2);  // 512 x 64
  for (const GemvLayout& l : kGemvLayouts)
    if (l.max_regs > 0) EXPECT_LE(l.MinBlocks() * l.Threads() * l.max_regs, 65536);
}

TEST(Gemv, RefusesAnIncompleteFusion) {
  alignas(16) static uint16_t buf[64];
  alignas(16) static float out[64];
  GemvFusion half;
  half.out_parts = out;  // no gamma or next_in
  EXPECT_THROW(Gemv(buf, buf, GemvWeights::kBf16, 1.f, out, 1, 4, 8, true, half, nullptr), Error);
  GemvFusion odd;
  odd.act = buf;
  EXPECT_THROW(Gemv(buf, buf, GemvWeights::kBf16, 1.f, nullptr, 1, 5, 8, false, odd, nullptr),
               Error);  // SwiGLU pairs rows
  EXPECT_THROW(Gemv(buf, buf, GemvWeights::kBf16, 1.f, nullptr, 1, 4, 8, false, {}, nullptr),
               Error);  // nowhere to write
  GemvFusion uncounted;
  uncounted.norm_parts = out;  // no count of its pieces
  EXPECT_THROW(Gemv(buf, buf, GemvWeights::kBf16, 1.f, out, 1, 4, 8, false, uncounted, nullptr),
               Error);
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

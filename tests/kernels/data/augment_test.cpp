#include "kernels/data/augment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kernels/common/rng.h"
#include "kernels/reference/image.h"

namespace dlb::data {
namespace {

TEST(SampleAugment, CropsFitTheImageWithTorchvisionsAreaAndRatioRanges) {
  int flips = 0;
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    const int w = 100 + int(seed % 500), h = 80 + int(seed * 7 % 400);
    const Augment a = SampleAugment(w, h, seed);
    ASSERT_GE(a.crop.x, 0);
    ASSERT_GE(a.crop.y, 0);
    ASSERT_LE(a.crop.x + a.crop.w, w);
    ASSERT_LE(a.crop.y + a.crop.h, h);
    const double area = double(a.crop.w) * a.crop.h / (double(w) * h);
    const double ratio = double(a.crop.w) / a.crop.h;
    // Rounding the sides to whole pixels moves both a little off their drawn values.
    EXPECT_GE(area, 0.08 * 0.95) << seed;
    EXPECT_LE(area, 1.0) << seed;
    EXPECT_GE(ratio, 0.75 * 0.95) << seed;
    EXPECT_LE(ratio, 4.0 / 3.0 * 1.05) << seed;
    flips += a.flip;
  }
  EXPECT_NEAR(flips / 2000.0, 0.5, 0.05);
  // The same seed, the same draw.
  const Augment a = SampleAugment(400, 300, 99), b = SampleAugment(400, 300, 99);
  EXPECT_EQ(a.crop.x, b.crop.x);
  EXPECT_EQ(a.crop.w, b.crop.w);
  EXPECT_EQ(a.flip, b.flip);
}

TEST(SampleAugment, FallsBackToTheCentralCropWithTheRatioClamped) {
  // A 1000 x 20 strip: no box of ratio <= 4/3 and area >= 8% fits in 10 tries.
  const Augment a = SampleAugment(1000, 20, 5);
  EXPECT_EQ(a.crop.h, 20);
  EXPECT_EQ(a.crop.w, 27);  // round(20 * 4/3)
  EXPECT_EQ(a.crop.x, (1000 - 27) / 2);
  EXPECT_EQ(a.crop.y, 0);
}

TEST(ChooseScale, TakesTheSmallestDctScaleThatKeepsTheCropAtLeastTheOutput) {
  const std::vector<Scale> s = {{2, 1}, {1, 1}, {7, 8}, {1, 2}, {3, 8}, {1, 4}, {1, 8}};
  EXPECT_EQ(ChooseScale({0, 0, 600, 600}, 224, s).denom, 8);  // 3/8: 225 px
  EXPECT_EQ(ChooseScale({0, 0, 600, 600}, 224, s).num, 3);
  EXPECT_EQ(ChooseScale({0, 0, 500, 460}, 224, s).denom, 2);  // 1/2: 250 x 230
  const Scale one = ChooseScale({0, 0, 230, 400}, 224, s);    // nothing below 1 fits
  EXPECT_EQ(one.num, one.denom);
  EXPECT_EQ(Scaled(333, {3, 8}), 125);  // ceil(124.875), as TJSCALED
}

std::vector<uint8_t> RandomImage(int w, int h, uint64_t seed) {
  Rng r(seed);
  std::vector<uint8_t> px(size_t(w) * h * 3);
  for (auto& p : px) p = uint8_t(r.Next() >> 56);
  return px;
}

// The resize and the normalisation against the float64 reference, on noise (the hardest case
// for rounding) at full and reduced scale, flipped and not.
TEST(CropResizeNormalize, MatchTheFloat64ReferenceWithinOneEightBitStep) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const int fw = 300 + int(seed) * 13, fh = 260 + int(seed) * 7;
    const Augment a = SampleAugment(fw, fh, seed);
    // Decoded at full size, or at roughly half (the dims as TJSCALED gives them).
    const Scale sc = seed % 2 ? Scale{1, 1} : Scale{1, 2};
    const int sw = Scaled(fw, sc), sh = Scaled(fh, sc);
    const auto rgb = RandomImage(sw, sh, seed);
    const int out = 64;
    std::vector<uint8_t> crop(size_t(out) * out * 3);
    CropResize(rgb.data(), sw, sh, fw, fh, a, out, crop.data());
    const auto ref = ReferenceSample(rgb, sw, sh, fw, fh, a, out, kImageNetStats);
    for (DType dt : {DType::kF32, DType::kBF16})
      for (Layout l : {Layout::kNCHW, Layout::kNHWC}) {
        std::vector<uint8_t> dst(SampleBytes(out, dt));
        Normalize(crop.data(), out, kImageNetStats, dt, l, dst.data());
        double worst = 0;
        int off_by_one = 0;
        for (int c = 0; c < 3; ++c)
          for (int p = 0; p < out * out; ++p) {
            const size_t i = l == Layout::kNCHW ? size_t(c) * out * out + p : size_t(p) * 3 + c;
            const float got = dt == DType::kBF16
                                  ? Bf16ToFloat(reinterpret_cast<uint16_t*>(dst.data())[i])
                                  : reinterpret_cast<float*>(dst.data())[i];
            const double e = std::abs(got - ref[size_t(c) * out * out + p]);
            worst = std::max(worst, e);
            off_by_one += e > 1e-3 && dt == DType::kF32;
          }
        const double step = 1.0 / 255 / 0.224;
        EXPECT_LE(worst, step * 1.01 + (dt == DType::kBF16 ? 0.011 : 1e-5))
            << "seed " << seed << " " << Name(dt) << " " << Name(l);
        // Float and double disagree only where the value sits on a rounding boundary.
        EXPECT_LT(off_by_one, out * out * 3 / 100) << "seed " << seed;
      }
  }
}

TEST(CropResize, AnIdentityCropIsACopyAndTheFlipMirrorsIt) {
  const int n = 32;
  const auto rgb = RandomImage(n, n, 3);
  Augment a;
  a.crop = {0, 0, n, n};
  std::vector<uint8_t> out(size_t(n) * n * 3), flipped(out.size());
  CropResize(rgb.data(), n, n, n, n, a, n, out.data());
  EXPECT_EQ(out, rgb);
  a.flip = true;
  CropResize(rgb.data(), n, n, n, n, a, n, flipped.data());
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x)
      for (int c = 0; c < 3; ++c)
        ASSERT_EQ(flipped[(size_t(y) * n + x) * 3 + c], rgb[(size_t(y) * n + (n - 1 - x)) * 3 + c]);
}

// The fused resize and normalisation, and the resize from a decoded window, give exactly the
// values of CropResize over the whole image followed by Normalize.
TEST(CropResizeNormalize, IsCropResizeThenNormalizeExactlyAlsoFromAWindow) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const int fw = 280 + int(seed) * 17, fh = 250 + int(seed) * 11, out = 48;
    const Augment a = SampleAugment(fw, fh, seed);
    const auto rgb = RandomImage(fw, fh, seed);
    std::vector<uint8_t> crop(size_t(out) * out * 3);
    CropResize(rgb.data(), fw, fh, fw, fh, a, out, crop.data());
    // The window the taps need, one pixel wider where the image allows.
    Window w = TapWindow(a.crop, fw, fh, fw, fh, out);
    ASSERT_GE(w.x, 0);
    ASSERT_LE(w.x + w.w, fw);
    if (w.x > 0) --w.x, ++w.w;
    std::vector<uint8_t> part(size_t(w.w) * w.h * 3);
    for (int y = 0; y < w.h; ++y)
      std::copy_n(&rgb[(size_t(w.y + y) * fw + w.x) * 3], size_t(w.w) * 3,
                  &part[size_t(y) * w.w * 3]);
    std::vector<uint8_t> crop_w(crop.size());
    CropResize(part.data(), fw, fh, fw, fh, a, out, crop_w.data(), w);
    EXPECT_EQ(crop_w, crop) << seed;
    for (DType dt : {DType::kF32, DType::kBF16})
      for (Layout l : {Layout::kNCHW, Layout::kNHWC}) {
        std::vector<uint8_t> two(SampleBytes(out, dt)), fused(two.size());
        Normalize(crop.data(), out, kImageNetStats, dt, l, two.data());
        CropResizeNormalize(part.data(), fw, fh, fw, fh, a, out, kImageNetStats, dt, l,
                            fused.data(), w);
        EXPECT_TRUE(fused == two) << seed << " " << Name(dt) << " " << Name(l);
      }
    // A window that misses a tap is refused, not read out of bounds.
    Window small = w;
    ++small.x, --small.w;
    if (w.x + 1 > TapWindow(a.crop, fw, fh, fw, fh, out).x)
      EXPECT_THROW(CropResize(part.data(), fw, fh, fw, fh, a, out, crop_w.data(), small), Error);
  }
}

TEST(CifarCropFlip, MatchesTheReferenceExactlyIncludingThePadding) {
  std::vector<uint8_t> planes(3 * 32 * 32);
  Rng r(11);
  for (auto& p : planes) p = uint8_t(r.Next() >> 56);
  bool corner_padded = false;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    const CifarAugment a = SampleCifarAugment(seed);
    ASSERT_GE(a.dx, 0);
    ASSERT_LE(a.dx, 8);
    std::vector<uint8_t> hwc(32 * 32 * 3);
    CifarCropFlip(planes.data(), a, hwc.data());
    std::vector<float> chw(3 * 32 * 32);
    Normalize(hwc.data(), 32, kCifarStats, DType::kF32, Layout::kNCHW, chw.data());
    const auto ref = ReferenceCifarSample(planes.data(), a, kCifarStats);
    for (size_t i = 0; i < chw.size(); ++i) ASSERT_NEAR(chw[i], ref[i], 1e-5) << seed << " " << i;
    corner_padded |= (a.dx == 0 && a.dy == 0);
  }
  EXPECT_TRUE(corner_padded) << "50 draws never hit the padded corner";
}

// The verification tolerance covers what two computations of one pixel may differ by: one 8-bit
// step (its value rounded to the other neighbour), and in bf16 the rounding of either side, for
// every value of every channel of both datasets' statistics; two steps in f32 it does not.
TEST(PixelTolerance, CoversOneStepAndEachBf16RoundingOfEveryNormalisedValue) {
  EXPECT_GT(PixelTolerance(DType::kBF16, 2), PixelTolerance(DType::kBF16, 1));
  EXPECT_GT(PixelTolerance(DType::kBF16, 1), PixelTolerance(DType::kF32, 1));
  for (const Stats& st : {kImageNetStats, kCifarStats}) {
    for (int v = 0; v < 255; ++v) {
      float f[2][3];
      uint16_t b[2][3];
      for (int k = 0; k < 2; ++k) {
        const uint8_t px[3] = {uint8_t(v + k), uint8_t(v + k), uint8_t(v + k)};
        Normalize(px, 1, st, DType::kF32, Layout::kNCHW, f[k]);
        Normalize(px, 1, st, DType::kBF16, Layout::kNCHW, b[k]);
      }
      for (int c = 0; c < 3; ++c) {
        const double f0 = f[0][c], f1 = f[1][c];
        const double b0 = Bf16ToFloat(b[0][c]), b1 = Bf16ToFloat(b[1][c]);
        EXPECT_LE(std::abs(f1 - f0), PixelTolerance(DType::kF32, 1)) << v << " " << c;
        EXPECT_LE(std::abs(b1 - f0), PixelTolerance(DType::kBF16, 1)) << v << " " << c;
        EXPECT_LE(std::abs(b0 - f1), PixelTolerance(DType::kBF16, 1)) << v << " " << c;
        EXPECT_LE(std::abs(b1 - b0), PixelTolerance(DType::kBF16, 2)) << v << " " << c;
        EXPECT_GT(2 * std::abs(f1 - f0), PixelTolerance(DType::kF32, 1)) << v << " " << c;
      }
    }
  }
}

}  // namespace
}  // namespace dlb::data

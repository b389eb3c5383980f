// The shapes the measured GEMM peak searches (kernels/common/peak_search.h), checked without a GPU.
#include "kernels/common/peak_search.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace dlb {
namespace {

constexpr int kH100Sms = 132;

bool Has(const std::vector<PeakShape>& shapes, PeakShape s) {
  return std::find(shapes.begin(), shapes.end(), s) != shapes.end();
}

TEST(PeakSearch, TheSmokeTierTimesOneLargeSquare) {
  EXPECT_EQ(PeakSearchShapes(DType::kBF16, PeakSearch::kOne, kH100Sms),
            (std::vector<PeakShape>{{8192, 8192, 8192}}));
  EXPECT_EQ(PeakSearchShapes(DType::kF32, PeakSearch::kOne, kH100Sms),
            (std::vector<PeakShape>{{4096, 4096, 4096}}));
}

TEST(PeakSearch, EveryListHoldsTheSquareAndDistinctAlignedShapesLargestFirst) {
  for (DType dt : {DType::kF32, DType::kTF32, DType::kBF16, DType::kFP8E4M3, DType::kInt8})
    for (PeakSearch scope : {PeakSearch::kOne, PeakSearch::kShapes, PeakSearch::kWide})
      for (int sms : {0, 114, kH100Sms}) {
        const std::vector<PeakShape> shapes = PeakSearchShapes(dt, scope, sms);
        const int64_t base = dt == DType::kF32 ? 4096 : 8192;
        SCOPED_TRACE(std::string(Name(dt)) + " " + Name(scope) + " " + std::to_string(sms));
        // The square the smoke tier times is in every search: a wider one never finds less.
        EXPECT_TRUE(Has(shapes, {base, base, base}));
        EXPECT_EQ(Has(shapes, {2 * base, 2 * base, 2 * base}), scope == PeakSearch::kWide);
        for (size_t i = 0; i < shapes.size(); ++i) {
          const PeakShape& s = shapes[i];
          EXPECT_EQ(s.m % 128, 0);
          EXPECT_EQ(s.n % 128, 0);
          EXPECT_EQ(s.k % 128, 0);
          // Bounded work: no shape is more than twice the square's, but the wide search's
          // double-size square (the full tier's square.16384).
          const PeakShape twice{2 * base, 2 * base, 2 * base};
          if (!(s == twice)) EXPECT_LE(s.Flops(), 2 * (PeakShape{base, base, base}.Flops()));
          for (size_t j = 0; j < i; ++j) {
            EXPECT_FALSE(shapes[j] == s) << "twice: " << s.m << "x" << s.n << "x" << s.k;
            EXPECT_GE(shapes[j].Flops(), s.Flops());
          }
        }
      }
}

TEST(PeakSearch, TheDefaultSearchIsShortAndTheFullOneWider) {
  const auto one = PeakSearchShapes(DType::kBF16, PeakSearch::kOne, kH100Sms);
  const auto shapes = PeakSearchShapes(DType::kBF16, PeakSearch::kShapes, kH100Sms);
  const auto wide = PeakSearchShapes(DType::kBF16, PeakSearch::kWide, kH100Sms);
  EXPECT_EQ(shapes.size(), 6u);
  EXPECT_EQ(wide.size(), 26u);
  EXPECT_GE(PeakSearchAlgorithms(PeakSearch::kShapes), 32);
  EXPECT_GE(PeakSearchAlgorithms(PeakSearch::kWide), 32);
  EXPECT_LT(PeakSearchAlgorithms(PeakSearch::kOne), PeakSearchAlgorithms(PeakSearch::kShapes));
  for (const PeakShape& s : shapes) EXPECT_TRUE(Has(wide, s)) << s.m << "x" << s.n << "x" << s.k;
}

// Wave-aligned rows: m a multiple of 32 x SMs (and of 128), nearest the square's size: on an H100's
// 132 SMs 8448 = 66 tiles of 128 rows (4224 for f32's smaller square); on 114 SMs 7296. Without an
// SM count, none.
TEST(PeakSearch, WaveAlignedShapesFollowTheSmCount) {
  EXPECT_TRUE(
      Has(PeakSearchShapes(DType::kBF16, PeakSearch::kShapes, kH100Sms), {8448, 8192, 8192}));
  EXPECT_TRUE(Has(PeakSearchShapes(DType::kBF16, PeakSearch::kShapes, 114), {7296, 8192, 8192}));
  EXPECT_TRUE(
      Has(PeakSearchShapes(DType::kF32, PeakSearch::kShapes, kH100Sms), {4224, 4096, 4096}));
  int wave = 0;
  for (const PeakShape& s : PeakSearchShapes(DType::kBF16, PeakSearch::kShapes, kH100Sms))
    wave += s.m == 8448;
  EXPECT_EQ(wave, 2);
  for (const PeakShape& s : PeakSearchShapes(DType::kBF16, PeakSearch::kShapes, 0))
    EXPECT_NE(s.m, 8448) << "no SM count, no wave-aligned shape";
}

TEST(PeakFinalistsKept, TheFastestKeepTheirGemmsWhileTheyFit) {
  // Everything fits: every finalist is re-timed.
  EXPECT_EQ(PeakFinalistsKept({1, 2, 3}, 10), (std::vector<bool>{true, true, true}));
  // The fastest first; one too large for what is left is skipped, a smaller one after it fits.
  EXPECT_EQ(PeakFinalistsKept({4, 5, 1, 3}, 6), (std::vector<bool>{true, false, true, false}));
  // Exactly the budget fits; none fits a budget of 0 unless it holds nothing (a dropped GEMM).
  EXPECT_EQ(PeakFinalistsKept({3, 3}, 6), (std::vector<bool>{true, true}));
  EXPECT_EQ(PeakFinalistsKept({1, 0}, 0), (std::vector<bool>{false, true}));
  EXPECT_TRUE(PeakFinalistsKept({}, 1).empty());
}

}  // namespace
}  // namespace dlb

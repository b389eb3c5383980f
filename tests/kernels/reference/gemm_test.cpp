#include "kernels/reference/gemm.h"

#include <gtest/gtest.h>

#include "kernels/common/error.h"
#include "kernels/common/fill.h"

namespace dlb {
namespace {

// A = [[1 2 3], [4 5 6]] (2x3), B = [[7 8], [9 10], [11 12]] (3x2): C = [[58 64], [139 154]].
const std::vector<float> kA = {1, 2, 3, 4, 5, 6};
const std::vector<float> kB = {7, 8, 9, 10, 11, 12};
const std::vector<double> kC = {58, 64, 139, 154};

TEST(ReferenceGemm, HandComputedNN) {
  GemmShape s{2, 2, 3, false, false};
  EXPECT_EQ(ReferenceGemm(s, kA, kB), kC);
}

TEST(ReferenceGemm, TransposedAIsReadAsKxM) {
  // A stored k x m = A^T = [[1 4], [2 5], [3 6]].
  GemmShape s{2, 2, 3, true, false};
  EXPECT_EQ(ReferenceGemm(s, {1, 4, 2, 5, 3, 6}, kB), kC);
}

TEST(ReferenceGemm, TransposedBIsReadAsNxK) {
  // B stored n x k = B^T = [[7 9 11], [8 10 12]].
  GemmShape s{2, 2, 3, false, true};
  EXPECT_EQ(ReferenceGemm(s, kA, {7, 9, 11, 8, 10, 12}), kC);
}

TEST(ReferenceGemm, BothTransposed) {
  GemmShape s{2, 2, 3, true, true};
  EXPECT_EQ(ReferenceGemm(s, {1, 4, 2, 5, 3, 6}, {7, 9, 11, 8, 10, 12}), kC);
}

TEST(ReferenceGemm, NonSquareShapeIsRowMajor) {
  // A 1x2 = [1 2], B 2x3 = [[1 2 3], [4 5 6]]: C = [9 12 15] (m=1, n=3).
  GemmShape s{1, 3, 2, false, false};
  EXPECT_EQ(ReferenceGemm(s, {1, 2}, {1, 2, 3, 4, 5, 6}), (std::vector<double>{9, 12, 15}));
}

TEST(ReferenceGemm, AccumulatesInDouble) {
  // 1 + 2^-30 - 1 is lost in float but kept in double.
  GemmShape s{1, 1, 3, false, false};
  float tiny = 1.0f / 1073741824.0f;
  EXPECT_EQ(ReferenceGemm(s, {1, tiny, -1}, {1, 1, 1})[0], double(tiny));
}

TEST(ReferenceGemm, ElementMatchesFullProductForEveryTranspose) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      GemmShape s{7, 5, 3, ta, tb};
      auto a = SeededValues(TensorSeed(1, 0), s.m * s.k, DType::kF32);
      auto b = SeededValues(TensorSeed(1, 1), s.k * s.n, DType::kF32);
      auto c = ReferenceGemm(s, a, b);
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; ++j)
          EXPECT_EQ(ReferenceGemmAt(s, a, b, i, j), c[i * s.n + j]) << i << "," << j;
      // The verifier's form: A and B computed as they are read.
      const SeededView va(TensorSeed(1, 0), s.m * s.k, DType::kF32),
          vb(TensorSeed(1, 1), s.k * s.n, DType::kF32);
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; ++j)
          EXPECT_EQ(ReferenceGemmAt(s, va, vb, i, j), c[i * s.n + j]);
      EXPECT_THROW(ReferenceGemmAt(s, SeededView(TensorSeed(1, 0), 1, DType::kF32), vb, 0, 0),
                   Error);
    }
}

TEST(ReferenceGemm, RejectsWrongSizesAndOutOfRangeElements) {
  GemmShape s{2, 2, 3, false, false};
  EXPECT_THROW(ReferenceGemm(s, {1, 2, 3}, kB), Error);
  EXPECT_THROW(ReferenceGemmAt(s, kA, kB, 2, 0), Error);
}

}  // namespace
}  // namespace dlb

#include "kernels/onednn/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kernels/common/fill.h"
#include "kernels/onednn/context.h"
#include "kernels/reference/gemm.h"
#include "tests/kernels/testing.h"

namespace dlb::onednn {
namespace {

using namespace ::dlb::testing;  // NOLINT: test helpers

// Odd sizes catch stride and transpose mix-ups that square powers of two hide.
constexpr GemmShape kShapes[] = {{127, 65, 33}, {64, 64, 64}, {1, 300, 17}, {96, 40, 256}};

class OneDnnMatmulTest : public ::testing::TestWithParam<DType> {};

TEST_P(OneDnnMatmulTest, MatchesReferenceForEveryTranspose) {
  RunConfig cfg;
  cfg.dtype = GetParam();
  cfg.threads = 2;
  Support support = OneDnnMatmul::Supports({8, 8, 8}, cfg);
  if (!support.ok) GTEST_SKIP() << support.why;
  for (GemmShape s : kShapes)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        s.ta = ta, s.tb = tb;
        SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
                     " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
        OneDnnMatmul op(s, cfg);
        op.Run();
        HostTensor out = op.Output();
        ASSERT_EQ(out.shape, (std::vector<int64_t>{s.m, s.n}));
        auto a = SeededValues(TensorSeed(cfg.seed, 0), size_t(s.m * s.k), cfg.dtype);
        auto b = SeededValues(TensorSeed(cfg.seed, 1), size_t(s.k * s.n), cfg.dtype);
        EXPECT_LT(RelativeL2(out.data, ReferenceGemm(s, a, b)), Tolerance(cfg.dtype)) << op.label();
      }
}

TEST_P(OneDnnMatmulTest, OutputIsPoisonedUntilRunAndLabelNamesImpl) {
  RunConfig cfg;
  cfg.dtype = GetParam();
  Support support = OneDnnMatmul::Supports({8, 8, 8}, cfg);
  if (!support.ok) GTEST_SKIP() << support.why;
  OneDnnMatmul op({16, 8, 4}, cfg);
  for (float v : op.Output().data) ASSERT_TRUE(std::isnan(v));
  EXPECT_NE(op.label().find(std::string(Name(cfg.dtype))), std::string::npos) << op.label();
  EXPECT_NE(op.label().find("threads"), std::string::npos) << op.label();
}

TEST_P(OneDnnMatmulTest, SearchKeepsACorrectImplementationAndSaysSo) {
  RunConfig cfg;
  cfg.dtype = GetParam();
  cfg.algo = "search";
  GemmShape s{127, 65, 33, true, false};
  Support support = OneDnnMatmul::Supports(s, cfg);
  if (!support.ok) GTEST_SKIP() << support.why;
  OneDnnMatmul op(s, cfg);
  EXPECT_NE(op.label().find("search best of"), std::string::npos) << op.label();
  EXPECT_EQ(op.label().find("ref"), std::string::npos) << op.label();
  for (float v : op.Output().data) ASSERT_TRUE(std::isnan(v));  // search runs must not leak
  op.Run();
  auto a = SeededValues(TensorSeed(cfg.seed, 0), size_t(s.m * s.k), cfg.dtype);
  auto b = SeededValues(TensorSeed(cfg.seed, 1), size_t(s.k * s.n), cfg.dtype);
  EXPECT_LT(RelativeL2(op.Output().data, ReferenceGemm(s, a, b)), Tolerance(cfg.dtype));
}

INSTANTIATE_TEST_SUITE_P(DTypes, OneDnnMatmulTest,
                         ::testing::Values(DType::kF32, DType::kBF16, DType::kF16),
                         [](const auto& info) { return std::string(Name(info.param)); });

TEST(OneDnnMatmulSupport, SaysWhyForTf32AndDTypesThisCpuLacks) {
  RunConfig cfg;
  cfg.dtype = DType::kTF32;
  Support tf32 = OneDnnMatmul::Supports({8, 8, 8}, cfg);
  EXPECT_FALSE(tf32.ok);
  EXPECT_NE(tf32.why.find("unsupported: tf32"), std::string::npos) << tf32.why;
  EXPECT_THROW(OneDnnMatmul({8, 8, 8}, cfg), Error);
  cfg.dtype = DType::kBF16;
  EXPECT_EQ(OneDnnMatmul::Supports({8, 8, 8}, cfg).ok, HasBf16());
  cfg.dtype = DType::kF32;
  EXPECT_FALSE(OneDnnMatmul::Supports({0, 8, 8}, cfg).ok);
  cfg.algo = "exhaustive";
  EXPECT_FALSE(OneDnnMatmul::Supports({8, 8, 8}, cfg).ok);
}

TEST(OneDnnMatmulCost, CountsTwoFlopsPerMacAndStorageBytes) {
  RunConfig cfg;
  OneDnnMatmul op({4, 3, 2}, cfg);
  EXPECT_EQ(op.cost().flops, 2.0 * 4 * 3 * 2);
  EXPECT_EQ(op.cost().bytes, (4 * 2 + 2 * 3 + 4 * 3) * 4.0);
}

}  // namespace
}  // namespace dlb::onednn

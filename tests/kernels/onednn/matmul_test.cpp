#include "kernels/onednn/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
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
  EXPECT_TRUE(std::regex_search(op.label(), std::regex(" search best of [1-9][0-9]* impls ")))
      << op.label();
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
  ExpectBareReason(tf32);
  EXPECT_EQ(tf32.why.find("tf32"), 0u) << tf32.why;
  try {
    OneDnnMatmul op({8, 8, 8}, cfg);
    FAIL() << "built a tf32 matmul on the CPU";
  } catch (const Unsupported& e) {
    EXPECT_EQ(e.what(), tf32.why);
  }
  cfg.dtype = DType::kBF16;
  const Support bf16 = OneDnnMatmul::Supports({8, 8, 8}, cfg);
  EXPECT_EQ(bf16.ok, HasBf16());
  if (!bf16.ok) ExpectBareReason(bf16);
  cfg.dtype = DType::kF16;
  const Support f16 = OneDnnMatmul::Supports({8, 8, 8}, cfg);
  if (!f16.ok) ExpectBareReason(f16);
  cfg.dtype = DType::kF32;
  ExpectBareReason(OneDnnMatmul::Supports({0, 8, 8}, cfg));
  cfg.algo = "exhaustive";
  ExpectBareReason(OneDnnMatmul::Supports({8, 8, 8}, cfg));
}

TEST(OneDnnMatmulCost, CountsTwoFlopsPerMacAndStorageBytes) {
  RunConfig cfg;
  OneDnnMatmul op({4, 3, 2}, cfg);
  EXPECT_EQ(op.cost().flops, 2.0 * 4 * 3 * 2);
  EXPECT_EQ(op.cost().bytes, (4 * 2 + 2 * 3 + 4 * 3) * 4.0);
}

}  // namespace
}  // namespace dlb::onednn

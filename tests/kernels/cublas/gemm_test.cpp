#include "kernels/cublas/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>

#include "kernels/common/fill.h"
#include "kernels/cuda/device.h"
#include "kernels/reference/gemm.h"
#include "tests/kernels/testing.h"

namespace dlb::cublas {
namespace {

using namespace ::dlb::testing;  // NOLINT: test helpers

constexpr DType kDTypes[] = {DType::kF32, DType::kTF32, DType::kF16, DType::kBF16};
// Odd sizes catch leading-dimension and transpose mix-ups that square powers of two hide.
constexpr GemmShape kShapes[] = {{127, 65, 33}, {64, 64, 64}, {1, 300, 17}, {256, 128, 512}};

template <class Op>
void ExpectMatchesReference(const GemmShape& s, const RunConfig& cfg) {
  SCOPED_TRACE(std::string(Name(cfg.dtype)) + " " + std::to_string(s.m) + "x" +
               std::to_string(s.n) + "x" + std::to_string(s.k) + " ta=" + std::to_string(s.ta) +
               " tb=" + std::to_string(s.tb) + " algo=" + cfg.algo);
  ASSERT_TRUE(Op::Supports(s, cfg).ok) << Op::Supports(s, cfg).why;
  Op op(s, cfg);
  op.Run();
  HostTensor out = op.Output();
  ASSERT_EQ(out.shape, (std::vector<int64_t>{s.m, s.n}));
  auto a = SeededValues(TensorSeed(cfg.seed, 0), size_t(s.m * s.k), cfg.dtype);
  auto b = SeededValues(TensorSeed(cfg.seed, 1), size_t(s.k * s.n), cfg.dtype);
  EXPECT_LT(RelativeL2(out.data, ReferenceGemm(s, a, b)), Tolerance(cfg.dtype)) << op.label();
}

class CublasGemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(CublasGemmTest, GemmExMatchesReferenceForEveryDTypeAndTranspose) {
  for (DType dt : kDTypes)
    for (GemmShape s : kShapes)
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          s.ta = ta, s.tb = tb;
          RunConfig cfg;
          cfg.dtype = dt;
          ExpectMatchesReference<CublasGemm>(s, cfg);
        }
}

TEST_F(CublasGemmTest, LtMatchesReferenceForEveryDTypeAndTranspose) {
  for (DType dt : kDTypes)
    for (GemmShape s : kShapes)
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          s.ta = ta, s.tb = tb;
          RunConfig cfg;
          cfg.dtype = dt;
          ExpectMatchesReference<CublasLtGemm>(s, cfg);
        }
}

TEST_F(CublasGemmTest, LtSearchKeepsACorrectAlgorithmAndSaysSo) {
  for (DType dt : {DType::kF32, DType::kBF16}) {
    RunConfig cfg;
    cfg.dtype = dt;
    cfg.algo = "search";
    ExpectMatchesReference<CublasLtGemm>({127, 65, 33, true, false}, cfg);
    CublasLtGemm op({256, 256, 256}, cfg);
    const std::regex said(
        "cublasLtMatmul search best of [1-9][0-9]* heuristic results: #[0-9]+ \\(");
    EXPECT_TRUE(std::regex_search(op.label(), said)) << op.label();
    for (float v : op.Output().data) ASSERT_TRUE(std::isnan(v));  // search runs must not leak
  }
}

TEST_F(CublasGemmTest, OutputIsPoisonedUntilRun) {
  RunConfig cfg;
  cfg.dtype = DType::kBF16;
  CublasLtGemm lt({16, 8, 4}, cfg);
  for (float v : lt.Output().data) ASSERT_TRUE(std::isnan(v));
  CublasGemm ex({16, 8, 4}, cfg);
  for (float v : ex.Output().data) ASSERT_TRUE(std::isnan(v));
}

TEST_F(CublasGemmTest, LabelsNameAlgorithmComputeTypeAndWorkspace) {
  RunConfig cfg;
  cfg.dtype = DType::kTF32;
  CublasLtGemm lt({128, 128, 128}, cfg);
  EXPECT_NE(lt.label().find("heuristic #0"), std::string::npos) << lt.label();
  EXPECT_NE(lt.label().find("tile"), std::string::npos) << lt.label();
  EXPECT_NE(lt.label().find("32F_FAST_TF32"), std::string::npos) << lt.label();
  EXPECT_NE(lt.label().find("workspace"), std::string::npos) << lt.label();
  CublasGemm ex({128, 128, 128}, cfg);
  EXPECT_NE(ex.label().find("32F_FAST_TF32"), std::string::npos) << ex.label();
}

TEST_F(CublasGemmTest, CostCountsTwoFlopsPerMacAndStorageBytes) {
  RunConfig cfg;
  cfg.dtype = DType::kF16;
  CublasLtGemm op({4, 3, 2}, cfg);
  EXPECT_EQ(op.cost().flops, 2.0 * 4 * 3 * 2);
  EXPECT_EQ(op.cost().bytes, (4 * 2 + 2 * 3 + 4 * 3) * 2.0);
}

TEST(CublasGemmSupport, SaysWhyWithoutADeviceOrForBadSizes) {
  RunConfig cfg;
  Support lt = CublasLtGemm::Supports({8, 8, 8}, cfg);
  Support ex = CublasGemm::Supports({8, 8, 8}, cfg);
  if (cuda::DeviceCount() == 0) {
    ExpectBareReason(lt);
    EXPECT_EQ(lt.why.find("no CUDA device"), 0u) << lt.why;
    ExpectBareReason(ex);
    EXPECT_THROW(CublasLtGemm({8, 8, 8}, cfg), Unsupported);
    EXPECT_THROW(CublasGemm({8, 8, 8}, cfg), Unsupported);
  } else {
    EXPECT_TRUE(lt.ok) << lt.why;
    EXPECT_TRUE(ex.ok) << ex.why;
    ExpectBareReason(CublasLtGemm::Supports({0, 8, 8}, cfg));
    ExpectBareReason(CublasGemm::Supports({int64_t{1} << 32, 8, 8}, cfg));
    EXPECT_THROW(CublasGemm({0, 8, 8}, cfg), Unsupported);
  }
  cfg.algo = "exhaustive";
  ExpectBareReason(CublasLtGemm::Supports({8, 8, 8}, cfg));
}

}  // namespace
}  // namespace dlb::cublas

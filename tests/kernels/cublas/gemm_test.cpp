#include "kernels/cublas/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "kernels/cuda/device.h"
#include "tests/kernels/gemm_suite.h"
#include "tests/kernels/testing.h"

namespace dlb::cublas {
namespace {

using namespace ::dlb::testing;  // NOLINT: test helpers

// cublasGemmEx and cublasLtMatmul, each in every dtype.
template <class GemmOp>
struct CublasOps {
  using Op = GemmOp;
  static RunConfig Config(DType dt) {
    RunConfig cfg;
    cfg.dtype = dt;
    return cfg;
  }
  static Support Available(const RunConfig&) {
    return cuda::DeviceCount() > 0 ? Support::Yes() : Support::No("no CUDA device");
  }
  // Odd sizes catch leading-dimension and transpose mix-ups that square powers of two hide.
  static std::vector<GemmShape> Shapes() {
    return {{127, 65, 33}, {64, 64, 64}, {1, 300, 17}, {256, 128, 512}};
  }
  static void CheckLabel(const Op&, const RunConfig&) {}
};

template <class GemmOp>
using CasesOf = ::testing::Types<
    GemmCase<CublasOps<GemmOp>, DType::kF32>, GemmCase<CublasOps<GemmOp>, DType::kTF32>,
    GemmCase<CublasOps<GemmOp>, DType::kF16>, GemmCase<CublasOps<GemmOp>, DType::kBF16>>;

INSTANTIATE_TYPED_TEST_SUITE_P(CublasGemmEx, GemmSuite, CasesOf<CublasGemm>, GemmCaseName);
INSTANTIATE_TYPED_TEST_SUITE_P(CublasLt, GemmSuite, CasesOf<CublasLtGemm>, GemmCaseName);

class CublasGemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(CublasGemmTest, LtSearchKeepsACorrectAlgorithmAndSaysSo) {
  for (DType dt : {DType::kF32, DType::kBF16}) {
    RunConfig cfg;
    cfg.dtype = dt;
    cfg.algo = "search";
    ExpectGemmMatchesReference<CublasLtGemm>({127, 65, 33, true, false}, cfg);
    CublasLtGemm op({256, 256, 256}, cfg);
    const std::regex said(
        "cublasLtMatmul search best of [1-9][0-9]* heuristic results: #[0-9]+ \\(");
    EXPECT_TRUE(std::regex_search(op.label(), said)) << op.label();
    for (float v : op.Output().data) ASSERT_TRUE(std::isnan(v));  // search runs must not leak
  }
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

TEST(CublasGemmSupport, SaysWhyWithoutADeviceOrForBadSizes) {
  RunConfig cfg;
  Support lt = CublasLtGemm::Supports({8, 8, 8}, cfg);
  Support ex = CublasGemm::Supports({8, 8, 8}, cfg);
  if (cuda::DeviceCount() == 0) {
    ExpectBareReason(lt);
    EXPECT_EQ(lt.why, cuda::NoDeviceReason());
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

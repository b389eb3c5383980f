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

// The 8-bit types: cuBLAS's alignment (k and n multiples of 16 for FP8, 4 for int8), odd m; each
// transpose exercises the relayout to TN at build. A GPU without FP8 (or int8) tensor cores skips.
template <class GemmOp>
struct CublasEightBitOps : CublasOps<GemmOp> {
  static Support Available(const RunConfig& cfg) {
    if (cuda::DeviceCount() == 0) return Support::No("no CUDA device");
    return GemmOp::Supports({16, 16, 16}, cfg);
  }
  static std::vector<GemmShape> Shapes() {
    return {{127, 64, 48}, {64, 64, 64}, {1, 304, 32}, {256, 128, 512}};
  }
};

template <class GemmOp>
using CasesOf = ::testing::Types<
    GemmCase<CublasOps<GemmOp>, DType::kF32>, GemmCase<CublasOps<GemmOp>, DType::kTF32>,
    GemmCase<CublasOps<GemmOp>, DType::kF16>, GemmCase<CublasOps<GemmOp>, DType::kBF16>,
    GemmCase<CublasEightBitOps<GemmOp>, DType::kInt8>>;
using LtCases = ::testing::Types<
    GemmCase<CublasOps<CublasLtGemm>, DType::kF32>, GemmCase<CublasOps<CublasLtGemm>, DType::kTF32>,
    GemmCase<CublasOps<CublasLtGemm>, DType::kF16>, GemmCase<CublasOps<CublasLtGemm>, DType::kBF16>,
    GemmCase<CublasEightBitOps<CublasLtGemm>, DType::kInt8>,
    GemmCase<CublasEightBitOps<CublasLtGemm>, DType::kFP8E4M3>,
    GemmCase<CublasEightBitOps<CublasLtGemm>, DType::kFP8E5M2>>;

INSTANTIATE_TYPED_TEST_SUITE_P(CublasGemmEx, GemmSuite, CasesOf<CublasGemm>, GemmCaseName);
INSTANTIATE_TYPED_TEST_SUITE_P(CublasLt, GemmSuite, LtCases, GemmCaseName);

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
    cfg.algo = Algo::kSearch;
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

// fp8 on cuBLASLt: scales, accumulation mode and the relayout said in the label; both accumulation
// modes verify; search still keeps a correct algorithm.
TEST_F(CublasGemmTest, Fp8LabelsSayAccumulationTypesAndLayout) {
  RunConfig cfg;
  cfg.dtype = DType::kFP8E4M3;
  const Support fp8 = CublasLtGemm::Supports({64, 64, 64}, cfg);
  if (!fp8.ok) GTEST_SKIP() << fp8.why;
  cfg.fast_accum = true;
  CublasLtGemm fast({64, 64, 64}, cfg);
  EXPECT_NE(fast.label().find(" fast accum"), std::string::npos) << fast.label();
  EXPECT_NE(fast.label().find("e4m3 x e4m3 -> bf16"), std::string::npos) << fast.label();
  EXPECT_NE(fast.label().find("B stored k-contiguous (TN) at build"), std::string::npos)
      << fast.label();
  cfg.fast_accum = false;
  cfg.algo = Algo::kSearch;
  for (DType dt : {DType::kFP8E4M3, DType::kFP8E5M2}) {
    cfg.dtype = dt;
    ExpectGemmMatchesReference<CublasLtGemm>({96, 64, 1024, true, false}, cfg);
  }
  CublasLtGemm full({64, 64, 64, false, true}, cfg);
  EXPECT_NE(full.label().find(" full accum"), std::string::npos) << full.label();
  EXPECT_EQ(full.label().find("at build"), std::string::npos) << full.label();  // already TN
  for (float v : full.Output().data) ASSERT_TRUE(std::isnan(v));  // search runs must not leak
}

// int8: exact at a k whose sums pass 2^24 nowhere, with search; compute 32I said.
TEST_F(CublasGemmTest, Int8IsExactAndSaysItsComputeType) {
  RunConfig cfg;
  cfg.dtype = DType::kInt8;
  cfg.algo = Algo::kSearch;
  const Support i8 = CublasLtGemm::Supports({64, 64, 64}, cfg);
  if (!i8.ok) GTEST_SKIP() << i8.why;
  const GemmShape s{200, 96, 4096};
  CublasLtGemm op(s, cfg);
  EXPECT_NE(op.label().find("compute 32I"), std::string::npos) << op.label();
  op.Run();
  const HostTensor out = op.Output();
  const std::vector<double> want = GemmReferenceFor(s, cfg.seed, cfg.dtype);
  ASSERT_EQ(out.data.size(), want.size());
  size_t wrong = 0;
  for (size_t i = 0; i < want.size(); ++i) wrong += double(out.data[i]) != want[i];
  EXPECT_EQ(wrong, 0u) << op.label();
}

TEST(CublasGemmSupport, Fp8IsCublasLtOnlyAndNeedsAlignedSizes) {
  RunConfig cfg;
  cfg.dtype = DType::kFP8E4M3;
  const Support ex = CublasGemm::Supports({64, 64, 64}, cfg);
  ExpectBareReason(ex);
  EXPECT_NE(ex.why.find("cuBLASLt"), std::string::npos) << ex.why;
  if (cuda::DeviceCount() == 0) return;
  const Support odd = CublasLtGemm::Supports({64, 60, 64}, cfg);
  ExpectBareReason(odd);
  if (odd.why.find("compute capability") == std::string::npos)
    EXPECT_NE(odd.why.find("multiples of 16"), std::string::npos) << odd.why;
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
  cfg.algo = Algo::kCache;  // a GEMM keeps no cache of winners
  ExpectBareReason(CublasLtGemm::Supports({8, 8, 8}, cfg));
}

}  // namespace
}  // namespace dlb::cublas

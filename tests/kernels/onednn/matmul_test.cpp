#include "kernels/onednn/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "kernels/common/cpu.h"
#include "kernels/onednn/context.h"
#include "tests/kernels/gemm_suite.h"
#include "tests/kernels/testing.h"

namespace dlb::onednn {
namespace {

using namespace ::dlb::testing;  // NOLINT: test helpers

// A dtype this CPU lacks skips its cases.
struct OneDnnMatmulOps {
  using Op = OneDnnMatmul;
  static RunConfig Config(DType dt) {
    RunConfig cfg;
    cfg.dtype = dt;
    cfg.threads = 2;
    return cfg;
  }
  static Support Available(const RunConfig& cfg) { return OneDnnMatmul::Supports({8, 8, 8}, cfg); }
  // Odd sizes catch stride and transpose mix-ups that square powers of two hide.
  static std::vector<GemmShape> Shapes() {
    return {{127, 65, 33}, {64, 64, 64}, {1, 300, 17}, {96, 40, 256}};
  }
  static void CheckLabel(const OneDnnMatmul& op, const RunConfig& cfg) {
    EXPECT_NE(op.label().find(std::string(Name(cfg.dtype))), std::string::npos) << op.label();
    EXPECT_NE(op.label().find("threads"), std::string::npos) << op.label();
  }
};

using OneDnnMatmulCases = ::testing::Types<
    GemmCase<OneDnnMatmulOps, DType::kF32>, GemmCase<OneDnnMatmulOps, DType::kBF16>,
    GemmCase<OneDnnMatmulOps, DType::kF16>, GemmCase<OneDnnMatmulOps, DType::kInt8>>;
INSTANTIATE_TYPED_TEST_SUITE_P(OneDnn, GemmSuite, OneDnnMatmulCases, GemmCaseName);

class OneDnnMatmulSearch : public ::testing::TestWithParam<DType> {};

TEST_P(OneDnnMatmulSearch, KeepsACorrectImplementationAndSaysSo) {
  RunConfig cfg;
  cfg.dtype = GetParam();
  cfg.algo = Algo::kSearch;
  GemmShape s{127, 65, 33, true, false};
  Support support = OneDnnMatmul::Supports(s, cfg);
  if (!support.ok) GTEST_SKIP() << support.why;
  OneDnnMatmul op(s, cfg);
  EXPECT_TRUE(std::regex_search(op.label(), std::regex(" search best of [1-9][0-9]* impls ")))
      << op.label();
  EXPECT_EQ(op.label().find("ref"), std::string::npos) << op.label();
  for (float v : op.Output().data) ASSERT_TRUE(std::isnan(v));  // search runs must not leak
  op.Run();
  EXPECT_LE(RelativeL2(op.Output().data, GemmReferenceFor(s, cfg.seed, cfg.dtype)),
            Tolerance(cfg.dtype));  // int8: 0, exact
}

INSTANTIATE_TEST_SUITE_P(DTypes, OneDnnMatmulSearch,
                         ::testing::Values(DType::kF32, DType::kBF16, DType::kF16, DType::kInt8),
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
  cfg.algo = Algo::kCache;  // a GEMM keeps no cache of winners
  ExpectBareReason(OneDnnMatmul::Supports({8, 8, 8}, cfg));
}

// int8 runs where the CPU has exact int8 dot products (VNNI, AMX) and says why not elsewhere; fp8
// never runs on the CPU.
TEST(OneDnnMatmulSupport, Int8NeedsVnniOrAmxAndFp8IsTurnedDown) {
  RunConfig cfg;
  cfg.dtype = DType::kInt8;
  const Support i8 = OneDnnMatmul::Supports({8, 8, 8}, cfg);
  EXPECT_EQ(i8.ok, HasInt8());
  const std::string flags = " " + HostCpu().flags + " ";
  const bool vnni = flags.find(" avx512_vnni ") != std::string::npos ||
                    flags.find(" amx_int8 ") != std::string::npos;
  if (vnni) EXPECT_TRUE(i8.ok) << i8.why;
  if (!i8.ok) {
    ExpectBareReason(i8);
    EXPECT_EQ(i8.why, NoInt8Reason());
    EXPECT_EQ(i8.why.rfind("int8 needs avx512_vnni", 0), 0u) << i8.why;
    try {
      OneDnnMatmul op({8, 8, 8}, cfg);
      FAIL() << "built an int8 matmul on a CPU without VNNI";
    } catch (const Unsupported& e) {
      EXPECT_EQ(e.what(), i8.why);
    }
  } else {
    EXPECT_EQ(NoInt8Reason(), "");
    OneDnnMatmul op({64, 48, 4096}, cfg);  // exact: no sum reaches 2^24
    EXPECT_NE(op.label().find("int8 (s8 x s8 -> s32)"), std::string::npos) << op.label();
    EXPECT_EQ(op.cost().bytes, double(64 * 4096 + 4096 * 48 + 64 * 48 * 4));
    op.Run();
    const std::vector<double> want = GemmReferenceFor({64, 48, 4096}, cfg.seed, cfg.dtype);
    const HostTensor got = op.Output();
    ASSERT_EQ(got.data.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(double(got.data[i]), want[i]) << i;
  }
  for (DType dt : {DType::kFP8E4M3, DType::kFP8E5M2}) {
    cfg.dtype = dt;
    const Support fp8 = OneDnnMatmul::Supports({16, 16, 16}, cfg);
    ExpectBareReason(fp8);
    EXPECT_EQ(fp8.why.rfind(std::string(Name(dt)), 0), 0u) << fp8.why;
  }
}

}  // namespace
}  // namespace dlb::onednn

#include "kernels/cudnn/attn.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cuda/device.h"
#include "tests/kernels/attn_suite.h"
#include "tests/kernels/testing.h"

namespace dlb {
namespace {

using ::dlb::testing::ExpectBareReason;

AttnShape Shape(int64_t b, int64_t h, int64_t g, int64_t s, int64_t d, bool causal, AttnPass pass) {
  AttnShape a;
  a.batch = b, a.heads = h, a.kv_heads = g, a.seq = s, a.head_dim = d;
  a.causal = causal;
  a.pass = pass;
  return a;
}

// The error the fused kernels may have against float64 on inputs already rounded to the dtype:
// they keep scores, softmax and accumulation in fp32, but round P (forward and backward) and dS
// (backward) to the input type for the tensor-core matmuls, and round the output. Each rounding is
// at most half an ulp, 2^-9 relative in bf16 (rms about 2^-9/sqrt(3) = 1.1e-3), and the sums over
// keys average them rather than add them up, so bf16 lands near 3e-3 relative L2; 1e-2 (the
// family's 16-bit tolerance) keeps a 3x margin. f16 rounds 8x finer and gets the same bound. The
// backward also starts from the forward's rounded O (rowsum(dO * O)), one more rounding of the
// same size.
double AttnTolerance(DType dt) { return Tolerance(dt); }

// The conformance suite (tests/kernels/attn_suite.h) on cuDNN: every small shape in both passes,
// causal and not, bf16 and f16: multi-head, grouped-query (4 query heads per kv head) and
// multi-query, a sequence that is not a multiple of 64 or 128 (the backward's padding-mask
// lowering on older cuDNN), and head_dim 128.
struct CudnnAttnOps {
  using Op = cudnn::CudnnAttn;
  static constexpr const char* kName = "Cudnn";
  static bool HasDevice() { return cuda::DeviceCount() > 0; }
  static std::vector<AttnShape> GridShapes() {
    return {Shape(2, 4, 4, 128, 64, false, AttnPass::kFwd),
            Shape(2, 8, 2, 128, 64, false, AttnPass::kFwd),
            Shape(1, 4, 1, 64, 32, false, AttnPass::kFwd),
            Shape(2, 2, 2, 100, 64, false, AttnPass::kFwd),
            Shape(1, 2, 1, 256, 128, false, AttnPass::kFwd)};
  }
  static std::vector<DType> GridDTypes() { return {DType::kBF16, DType::kF16}; }
  static constexpr uint64_t kGridSeed = 11;
  static double Bound(DType dt, AttnPass) { return AttnTolerance(dt); }
  // The backward's dQ accumulates with atomics in some engines.
  static constexpr bool kDeterministic = false;
  static void CheckLabel(const std::string& label, const RunConfig&) {
    EXPECT_NE(label.find("fused SDPA"), std::string::npos) << label;
    EXPECT_NE(label.find("engine"), std::string::npos) << label;
    EXPECT_NE(label.find(", heuristic: first usable"), std::string::npos) << label;
  }
  static std::vector<testing::AttnCase> SupportedCases() {
    std::vector<testing::AttnCase> cases;
    for (DType dt : GridDTypes())
      for (const AttnShape& s : GridShapes()) cases.push_back({s, Config(dt)});
    return cases;
  }
  static testing::AttnCase OutputAtCase() {
    return {Shape(2, 4, 2, 128, 64, true, AttnPass::kFwd), Config(DType::kBF16)};
  }

 private:
  static RunConfig Config(DType dt) {
    RunConfig cfg;
    cfg.dtype = dt;
    return cfg;
  }
};

TEST(CudnnAttn, SearchPicksAVerifiedEngine) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << cuda::NoDeviceReason();
  RunConfig cfg;
  cfg.dtype = DType::kBF16;
  cfg.algo = Algo::kSearch;
  for (AttnPass pass : {AttnPass::kFwd, AttnPass::kBwd}) {
    const AttnShape s = Shape(2, 8, 2, 256, 64, true, pass);
    ASSERT_TRUE(cudnn::CudnnAttn::Supports(s, cfg).ok);
    std::string label;
    testing::RunAgainstAttnReference<CudnnAttnOps>(s, cfg, &label);
    EXPECT_NE(label.find(", searched "), std::string::npos) << label;
  }
}

// Supports() answers without a GPU for what the device does not decide.
TEST(CudnnAttn, UnsupportedSaysWhy) {
  RunConfig cfg;
  cfg.dtype = DType::kBF16;
  const AttnShape ok = Shape(1, 4, 2, 128, 64, true, AttnPass::kFwd);

  AttnShape bad = ok;
  bad.kv_heads = 3;  // 4 query heads do not split into 3 groups
  Support s = cudnn::CudnnAttn::Supports(bad, cfg);
  ExpectBareReason(s);
  EXPECT_NE(s.why.find("invalid"), std::string::npos) << s.why;

  for (DType dt : {DType::kF32, DType::kTF32}) {
    RunConfig f32 = cfg;
    f32.dtype = dt;
    s = cudnn::CudnnAttn::Supports(ok, f32);
    ExpectBareReason(s);
    EXPECT_NE(s.why.find("f16 or bf16"), std::string::npos) << s.why;
  }

  bad = ok;
  bad.head_dim = 60;
  s = cudnn::CudnnAttn::Supports(bad, cfg);
  ExpectBareReason(s);
  EXPECT_NE(s.why.find("multiple of 8"), std::string::npos) << s.why;

  bad = ok;
  bad.pass = AttnPass::kBwd;
  bad.seq = 1;
  s = cudnn::CudnnAttn::Supports(bad, cfg);
  ExpectBareReason(s);

  if (cuda::DeviceCount() == 0) {
    s = cudnn::CudnnAttn::Supports(ok, cfg);
    ExpectBareReason(s);
  } else {
    EXPECT_TRUE(cudnn::CudnnAttn::Supports(ok, cfg).ok);
    bad = ok;
    bad.head_dim = 512;
    s = cudnn::CudnnAttn::Supports(bad, cfg);
    ExpectBareReason(s);
    EXPECT_NE(s.why.find("head_dim up to"), std::string::npos) << s.why;
  }
}

}  // namespace

namespace testing {
INSTANTIATE_TYPED_TEST_SUITE_P(Cudnn, AttnSuite, CudnnAttnOps, OpsName);
INSTANTIATE_TEST_SUITE_P(Cudnn, AttnGrid, ::testing::ValuesIn(AttnGridCases<CudnnAttnOps>()),
                         AttnGridCaseName);
}  // namespace testing
}  // namespace dlb

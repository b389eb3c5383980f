#include "kernels/cudnn/attn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/cuda/device.h"
#include "kernels/reference/attn.h"
#include "tests/kernels/testing.h"

namespace dlb {
namespace {

using ::dlb::testing::ExpectBareReason;
using ::dlb::testing::RelativeL2;

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

struct AttnCase {
  AttnShape shape;
  DType dtype;
};

std::string CaseText(const AttnCase& c) {
  const AttnShape& s = c.shape;
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s_%s_b%ldh%ldg%lds%ldd%ld%s", Name(s.pass),
                std::string(Name(c.dtype)).c_str(), long(s.batch), long(s.heads), long(s.kv_heads),
                long(s.seq), long(s.head_dim), s.causal ? "_causal" : "");
  return buf;
}
std::string CaseName(const ::testing::TestParamInfo<AttnCase>& info) {
  return CaseText(info.param);
}
// Readable parameters in gtest's and ctest's listings.
void PrintTo(const AttnCase& c, std::ostream* os) { *os << CaseText(c); }

// Every small shape in both passes, causal and not, bf16 and f16: multi-head, grouped-query
// (4 query heads per kv head) and multi-query, a sequence that is not a multiple of 64 or 128
// (the backward's padding-mask lowering on older cuDNN), and head_dim 128.
std::vector<AttnCase> SmallCases() {
  const std::vector<std::vector<int64_t>> shapes = {{2, 4, 4, 128, 64},
                                                    {2, 8, 2, 128, 64},
                                                    {1, 4, 1, 64, 32},
                                                    {2, 2, 2, 100, 64},
                                                    {1, 2, 1, 256, 128}};
  std::vector<AttnCase> cases;
  for (AttnPass pass : {AttnPass::kFwd, AttnPass::kBwd})
    for (DType dt : {DType::kBF16, DType::kF16})
      for (bool causal : {false, true})
        for (const auto& v : shapes)
          cases.push_back({Shape(v[0], v[1], v[2], v[3], v[4], causal, pass), dt});
  return cases;
}

// Runs the op once and compares its whole output with the float64 reference.
void CheckAgainstReference(const AttnShape& s, const RunConfig& cfg, std::string* label) {
  const Support sup = cudnn::CudnnAttn::Supports(s, cfg);
  ASSERT_TRUE(sup.ok) << sup.why;
  cudnn::CudnnAttn op(s, cfg);
  op.Run();
  const HostTensor out = op.Output();
  ReferenceAttn ref(s, cfg.seed, cfg.dtype);
  ASSERT_EQ(int64_t(out.data.size()), ref.OutputElems());
  std::vector<double> want(out.data.size());
  for (size_t i = 0; i < want.size(); ++i) want[i] = ref.At(int64_t(i));
  for (size_t i = 0; i < out.data.size(); ++i)
    ASSERT_FALSE(std::isnan(out.data[i])) << "index " << i << ": " << op.label();
  const double err = RelativeL2(out.data, want);
  EXPECT_LE(err, AttnTolerance(cfg.dtype)) << op.label();
  std::printf("  rel-L2 %.3e  %s\n", err, op.label().c_str());
  if (s.pass == AttnPass::kBwd) {  // each gradient on its own: a small one hides in the others
    const int64_t q = s.QElems(), kv = s.KvElems();
    const int64_t begin[3] = {0, q, q + kv}, size[3] = {q, kv, kv};
    const char* names[3] = {"dQ", "dK", "dV"};
    for (int t = 0; t < 3; ++t) {
      const std::vector<float> got(out.data.begin() + begin[t],
                                   out.data.begin() + begin[t] + size[t]);
      const std::vector<double> w(want.begin() + begin[t], want.begin() + begin[t] + size[t]);
      EXPECT_LE(RelativeL2(got, w), AttnTolerance(cfg.dtype)) << names[t] << ": " << op.label();
    }
  }
  *label = op.label();
}

class CudnnAttnSmall : public ::testing::TestWithParam<AttnCase> {};

TEST_P(CudnnAttnSmall, MatchesFloat64Reference) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << cuda::NoDeviceReason();
  RunConfig cfg;
  cfg.dtype = GetParam().dtype;
  cfg.seed = 11;
  std::string label;
  CheckAgainstReference(GetParam().shape, cfg, &label);
  EXPECT_NE(label.find("fused SDPA"), std::string::npos) << label;
  EXPECT_NE(label.find("engine"), std::string::npos) << label;
  EXPECT_NE(label.find(", heuristic: first usable"), std::string::npos) << label;
}

INSTANTIATE_TEST_SUITE_P(Cudnn, CudnnAttnSmall, ::testing::ValuesIn(SmallCases()), CaseName);

TEST(CudnnAttn, SearchPicksAVerifiedEngine) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << cuda::NoDeviceReason();
  RunConfig cfg;
  cfg.dtype = DType::kBF16;
  cfg.algo = Algo::kSearch;
  for (AttnPass pass : {AttnPass::kFwd, AttnPass::kBwd}) {
    std::string label;
    CheckAgainstReference(Shape(2, 8, 2, 256, 64, true, pass), cfg, &label);
    EXPECT_NE(label.find(", searched "), std::string::npos) << label;
  }
}

// Sampled positions read the same values as the whole output, across dQ, dK and dV.
TEST(CudnnAttn, OutputAtMatchesOutput) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << cuda::NoDeviceReason();
  RunConfig cfg;
  cfg.dtype = DType::kBF16;
  for (AttnPass pass : {AttnPass::kFwd, AttnPass::kBwd}) {
    cudnn::CudnnAttn op(Shape(2, 4, 2, 128, 64, true, pass), cfg);
    const HostTensor before = op.Output();
    for (float v : before.data) ASSERT_TRUE(std::isnan(v)) << "the output starts poisoned";
    op.Run();
    const HostTensor all = op.Output();
    const int64_t n = int64_t(all.data.size());
    std::vector<int64_t> flat;
    for (int64_t i = n - 1; i >= 0; i -= 997) flat.push_back(i);  // descending, every tensor
    flat.push_back(0);
    const HostTensor some = op.OutputAt(flat);
    ASSERT_EQ(some.data.size(), flat.size());
    for (size_t j = 0; j < flat.size(); ++j)
      EXPECT_EQ(some.data[j], all.data[size_t(flat[j])]) << "index " << flat[j];
    EXPECT_TRUE(op.OutputAt({n}).data.empty());
    EXPECT_EQ(op.cost().items, 2);
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
}  // namespace dlb

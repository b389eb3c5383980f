#include "kernels/onednn/attn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/onednn/context.h"
#include "kernels/reference/attn.h"
#include "tests/kernels/attn_suite.h"
#include "tests/kernels/testing.h"

namespace dlb::onednn {
namespace {

using ::dlb::testing::AttnCase;
using ::dlb::testing::RelativeL2;

// The problem of the given sizes (tests/kernels/testing.h).
const auto Shape = dlb::testing::TestAttnShape;

RunConfig Config(DType dt) {
  RunConfig cfg;
  cfg.dtype = dt;
  cfg.threads = 2;
  cfg.seed = 17;
  return cfg;
}

// f32: a few ulps of f32 over S-term and D-term reductions (measured below 1e-6 here); bf16: the
// bf16 rounding of P, dS and the outputs (2^-9 each), with the backward's dP - rowsum(dO * O)
// cancellation on top.
double Bound(DType dt, AttnPass pass) {
  if (dt == DType::kF32) return pass == AttnPass::kFwd ? 1e-5 : 1e-4;
  return pass == AttnPass::kFwd ? 1e-2 : 3e-2;
}

// The conformance suite (tests/kernels/attn_suite.h) on oneDNN: odd sequence lengths catch
// stride and mask mix-ups, kv_heads 4 / 2 / 1 are plain, grouped-query and multi-query attention.
struct OneDnnAttnOps {
  using Op = OneDnnAttn;
  static constexpr const char* kName = "OneDnn";
  static bool HasDevice() { return true; }
  static std::vector<AttnShape> GridShapes() {
    std::vector<AttnShape> shapes;
    for (int64_t kv : {4, 2, 1}) {
      shapes.push_back(Shape(2, 4, kv, 37, 16, false, AttnPass::kFwd));
      shapes.push_back(Shape(1, 4, kv, 64, 32, false, AttnPass::kFwd));
    }
    return shapes;
  }
  static std::vector<DType> GridDTypes() { return {DType::kF32, DType::kBF16}; }
  static constexpr uint64_t kGridSeed = 17;
  static double Bound(DType dt, AttnPass pass) { return onednn::Bound(dt, pass); }
  static constexpr bool kDeterministic = true;
  static void CheckLabel(const std::string& label, const RunConfig& cfg) {
    EXPECT_NE(label.find("matmul"), std::string::npos) << label;
    EXPECT_NE(label.find("; " + std::string(Name(cfg.dtype)) + ", "), std::string::npos) << label;
  }
  static std::vector<AttnCase> SupportedCases() {
    return {{Shape(2, 8, 2, 128, 64, true, AttnPass::kFwd), Config(DType::kF32)}};
  }
  static AttnCase OutputAtCase() {
    return {Shape(1, 4, 2, 40, 8, true, AttnPass::kFwd), Config(DType::kF32)};
  }
};

// Sequences long enough that the score buffers hold fewer kv groups than there are: several
// chunks, each written to its own part of the outputs (checked at sampled elements).
TEST(OneDnnAttn, SeveralChunksCoverEveryGroup) {
  const RunConfig cfg = Config(DType::kF32);
  for (AttnPass pass : {AttnPass::kFwd, AttnPass::kBwd}) {
    const AttnShape s = Shape(2, 4, 2, 2048, 8, true, pass);
    OneDnnAttn op(s, cfg);
    EXPECT_NE(op.label().find("2 chunk(s) of 2 kv group(s)"), std::string::npos) << op.label();
    op.Run();
    ReferenceAttn ref(s, cfg.seed, cfg.dtype);
    // Rows at both ends of every (batch, kv group); dK/dV rows cost O(S^2 D) per head the first
    // time, so a few of them.
    std::vector<int64_t> flat;
    const int64_t rows = s.batch * s.heads * s.seq;
    for (int64_t r : {int64_t(0), s.seq - 1, s.seq, 3 * s.seq + 5, rows - 1})
      for (int64_t t = 0; t < s.head_dim; ++t) flat.push_back(r * s.head_dim + t);
    if (pass == AttnPass::kBwd)
      for (int64_t kvrow : {int64_t(7), 3 * s.seq + 100})
        for (int64_t which : {0, 1})
          flat.push_back(s.QElems() + which * s.KvElems() + kvrow * s.head_dim + 3);
    const HostTensor got = op.OutputAt(flat);
    ASSERT_EQ(got.data.size(), flat.size());
    std::vector<double> want;
    for (int64_t i : flat) want.push_back(ref.At(i));
    EXPECT_LT(RelativeL2(got.data, want), Bound(cfg.dtype, pass)) << op.label();
    const HostTensor all = op.Output();
    for (size_t i = 0; i < flat.size(); ++i) EXPECT_EQ(got.data[i], all.data[size_t(flat[i])]);
  }
}

TEST(OneDnnAttn, LabelNamesThePrimitivesItRuns) {
  const AttnShape f = Shape(2, 8, 2, 128, 64, true, AttnPass::kFwd);
  OneDnnAttn fwd(f, Config(DType::kF32));
  AttnShape b = f;
  b.pass = AttnPass::kBwd;
  OneDnnAttn bwd(b, Config(DType::kF32));
  EXPECT_NE(bwd.label().find("recomputes P"), std::string::npos) << bwd.label();
  EXPECT_NE(bwd.label().find("softmax_bwd"), std::string::npos) << bwd.label();
  EXPECT_NE(fwd.label().find("binary"), std::string::npos) << "causal mask: " << fwd.label();
}

TEST(OneDnnAttn, RefusesWhatItCannotRunWithOneLine) {
  const AttnShape s = Shape(1, 4, 4, 64, 16, false, AttnPass::kFwd);
  EXPECT_NE(OneDnnAttn::Supports(s, Config(DType::kTF32)).why.find("tf32"), std::string::npos);
  EXPECT_NE(OneDnnAttn::Supports(s, Config(DType::kF16)).why.find("f16"), std::string::npos);
  if (!HasBf16())
    EXPECT_EQ(OneDnnAttn::Supports(s, Config(DType::kBF16)).why, "bf16 needs avx512_bf16 or amx");
  // Llama-70B's 8 query heads per kv head at 8192 keys: 2 GiB of scores for one group.
  const Support huge =
      OneDnnAttn::Supports(Shape(1, 64, 8, 8192, 128, true, AttnPass::kFwd), Config(DType::kF32));
  EXPECT_FALSE(huge.ok);
  EXPECT_NE(huge.why.find("2.0 GiB"), std::string::npos) << huge.why;
  EXPECT_EQ(huge.why.find('\n'), std::string::npos);
  EXPECT_THROW(OneDnnAttn(Shape(1, 3, 2, 8, 4, false, AttnPass::kFwd), Config(DType::kF32)),
               Unsupported);
}

}  // namespace
}  // namespace dlb::onednn

namespace dlb::testing {
INSTANTIATE_TYPED_TEST_SUITE_P(OneDnn, AttnSuite, onednn::OneDnnAttnOps, OpsName);
INSTANTIATE_TEST_SUITE_P(OneDnn, AttnGrid,
                         ::testing::ValuesIn(AttnGridCases<onednn::OneDnnAttnOps>()),
                         AttnGridCaseName);
}  // namespace dlb::testing

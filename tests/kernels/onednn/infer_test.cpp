#include "kernels/onednn/infer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "kernels/onednn/context.h"
#include "kernels/reference/infer.h"
#include "tests/kernels/testing.h"

namespace dlb {
namespace {

LlamaConfig Small() {
  LlamaConfig m;
  m.name = "small";
  m.layers = 2;
  m.dim = 64;
  m.heads = 4;
  m.kv_heads = 2;
  m.head_dim = 16;
  m.ffn = 96;
  m.vocab = 80;
  m.rope_theta = 500000;
  return m;
}

class OneDnnInferTest : public ::testing::TestWithParam<std::tuple<InferPhase, int, DType>> {};

TEST_P(OneDnnInferTest, LogitsMatchTheFloat64Step) {
  const auto [phase, batch, dt] = GetParam();
  if (dt == DType::kBF16 && !onednn::HasBf16()) GTEST_SKIP() << "no bf16 on this CPU";
  const InferShape s{Small(), phase, batch, phase == InferPhase::kPrefill ? 7 : 9};
  RunConfig cfg;
  cfg.dtype = dt;
  cfg.seed = 11;
  onednn::OneDnnInfer op(s, cfg);
  op.Run();
  op.Run();  // a second step appends at the same place: the same logits
  const HostTensor got = op.Output();
  RefCache cache = SeededRefCache(s, cfg.seed, dt);
  const Vec want =
      RefInferStep(s, SeededRefLlama(s.model, cfg.seed, dt), SeededTokens(11, s), &cache);
  ASSERT_EQ(got.data.size(), want.size());
  EXPECT_LT(testing::RelativeL2(got.data, want), dt == DType::kF32 ? 1e-5 : 1e-2);
}

INSTANTIATE_TEST_SUITE_P(
    Steps, OneDnnInferTest,
    ::testing::Combine(::testing::Values(InferPhase::kPrefill, InferPhase::kDecode),
                       ::testing::Values(1, 3), ::testing::Values(DType::kF32, DType::kBF16)));

TEST(OneDnnInfer, CountsTokensFlopsAndBytesOfTheShape) {
  const InferShape s{Small(), InferPhase::kDecode, 4, 32};
  RunConfig cfg;
  onednn::OneDnnInfer op(s, cfg);
  const Cost c = op.cost();
  EXPECT_EQ(c.items, 4);
  EXPECT_DOUBLE_EQ(c.flops, s.Flops());
  EXPECT_DOUBLE_EQ(c.bytes, s.Bytes(DType::kF32, DType::kF32));
  EXPECT_DOUBLE_EQ(op.KvBytes(), 2.0 * 2 * 4 * 32 * 33 * 4);
}

TEST(OneDnnInfer, RefusesWeightsItDoesNotOffer) {
  RunConfig cfg;
  cfg.dtype = DType::kInt8;
  const Support sup = onednn::OneDnnInfer::Supports({Small(), InferPhase::kDecode, 1, 8}, cfg);
  EXPECT_FALSE(sup.ok);
  EXPECT_NE(sup.why.find("int8"), std::string::npos);
  cfg.dtype = DType::kF32;
  LlamaConfig odd = Small();
  odd.kv_heads = 3;
  EXPECT_FALSE(onednn::OneDnnInfer::Supports({odd, InferPhase::kDecode, 1, 8}, cfg).ok);
}

}  // namespace
}  // namespace dlb

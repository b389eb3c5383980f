// LibTorch's CPU inference step against the float64 step of the same seeded model.
#include "kernels/torch/infer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "tests/kernels/testing.h"
#include "tests/kernels/infer_testing.h"

namespace dlb::testing {
namespace {

class TorchInferCpuTest : public ::testing::TestWithParam<StepParam> {};

// f32 within the family's f32 tolerance, and a second step, which writes the same cache
// positions, gives the same logits; bf16 (where the CPU has it) within the family's bf16 one.
TEST_P(TorchInferCpuTest, LogitsMatchTheFloat64Step) {
  const auto [phase, batch, ctx, gqa] = GetParam();
  const InferShape s{TinyLlama(gqa), phase, batch, ctx};
  for (DType dt : {DType::kF32, DType::kBF16}) {
    RunConfig cfg;
    cfg.dtype = dt;
    cfg.seed = 11;
    cfg.threads = 2;
    if (!libtorch::TorchInferCpu::Supports(s, cfg).ok) continue;
    libtorch::TorchInferCpu op(s, cfg);
    op.Run();
    const HostTensor first = op.Output();
    op.Run();
    const HostTensor got = op.Output();
    const Vec want = Float64Logits(s, cfg.seed, dt, dt);
    ASSERT_EQ(got.data.size(), want.size());
    EXPECT_EQ(got.shape, (std::vector<int64_t>{batch, s.model.vocab}));
    EXPECT_LT(RelativeL2(got.data, want), dt == DType::kF32 ? 1e-5 : 3e-2) << Name(dt);
    EXPECT_EQ(first.data, got.data) << Name(dt);
  }
}

INSTANTIATE_TEST_SUITE_P(Steps, TorchInferCpuTest,
                         ::testing::Values(StepParam{InferPhase::kDecode, 1, 9, true},
                                           StepParam{InferPhase::kDecode, 3, 40, true},
                                           StepParam{InferPhase::kDecode, 2, 17, false},
                                           StepParam{InferPhase::kPrefill, 1, 32, true},
                                           StepParam{InferPhase::kPrefill, 3, 7, true},
                                           StepParam{InferPhase::kPrefill, 2, 12, false}),
                         StepName);

TEST(TorchInferCpu, PoisonsItsOutputUntilTheFirstStep) {
  RunConfig cfg;
  libtorch::TorchInferCpu op({TinyLlama(true), InferPhase::kDecode, 1, 4}, cfg);
  const HostTensor before = op.Output();
  ASSERT_FALSE(before.data.empty());
  for (float x : before.data) ASSERT_TRUE(std::isnan(x));
}

TEST(TorchInferCpu, CountsTokensFlopsAndBytesOfTheShape) {
  const InferShape s{TinyLlama(true), InferPhase::kPrefill, 2, 16};
  RunConfig cfg;
  libtorch::TorchInferCpu op(s, cfg);
  const Cost c = op.cost();
  EXPECT_EQ(c.items, 32);
  EXPECT_DOUBLE_EQ(c.flops, s.Flops());
  EXPECT_DOUBLE_EQ(c.bytes, s.Bytes(DType::kF32, DType::kF32));
  EXPECT_DOUBLE_EQ(op.KvBytes(), 2.0 * 2 * 2 * 32 * 16 * 4);
  EXPECT_NE(op.label().find("LibTorch"), std::string::npos) << op.label();
  EXPECT_NE(op.label().find("f32 weights"), std::string::npos) << op.label();
}

TEST(TorchInferCpu, RefusesWeightsItDoesNotOfferSayingWhy) {
  RunConfig cfg;
  cfg.dtype = DType::kInt8;
  const InferShape s{TinyLlama(true), InferPhase::kDecode, 1, 8};
  Support sup = libtorch::TorchInferCpu::Supports(s, cfg);
  EXPECT_FALSE(sup.ok);
  EXPECT_NE(sup.why.find("int8"), std::string::npos) << sup.why;
  cfg.dtype = DType::kF32;
  LlamaConfig odd = TinyLlama(true);
  odd.kv_heads = 3;
  EXPECT_FALSE(libtorch::TorchInferCpu::Supports({odd, InferPhase::kDecode, 1, 8}, cfg).ok);
  EXPECT_THROW(libtorch::TorchInferCpu({odd, InferPhase::kDecode, 1, 8}, cfg), Unsupported);
}

}  // namespace
}  // namespace dlb::testing

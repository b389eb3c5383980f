// LibTorch's GPU inference step (the whole step in a CUDA graph) and the large models' eager f32
// check, each against the float64 step of the same seeded model on the tiny configuration.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/torch/infer.h"
#include "kernels/torch/step.h"
#include "tests/kernels/testing.h"
#include "tests/kernels/infer_testing.h"

namespace dlb::testing {
namespace {

class TorchInferGpuTest : public ::testing::TestWithParam<StepParam> {};

// bf16 within the family's bf16 tolerance; a second replay writes the same cache positions, so it
// gives the same logits.
TEST_P(TorchInferGpuTest, GraphLogitsMatchTheFloat64Step) {
  if (!libtorch::TorchHasCuda()) GTEST_SKIP() << "LibTorch sees no CUDA device";
  const auto [phase, batch, ctx, gqa] = GetParam();
  const InferShape s{TinyLlama(gqa), phase, batch, ctx};
  RunConfig cfg;
  cfg.dtype = DType::kBF16;
  cfg.seed = 11;
  libtorch::TorchInferGpu op(s, cfg);
  op.Run();
  const HostTensor first = op.Output();
  op.Run();
  const HostTensor got = op.Output();
  const Vec want = Float64Logits(s, cfg.seed, DType::kBF16, DType::kBF16);
  ASSERT_EQ(got.data.size(), want.size());
  EXPECT_LT(RelativeL2(got.data, want), 3e-2);
  EXPECT_EQ(first.data, got.data);
  EXPECT_NE(op.label().find("CUDA graph"), std::string::npos) << op.label();
}

INSTANTIATE_TEST_SUITE_P(Steps, TorchInferGpuTest,
                         ::testing::Values(StepParam{InferPhase::kDecode, 1, 9, true},
                                           StepParam{InferPhase::kDecode, 3, 300, true},
                                           StepParam{InferPhase::kDecode, 2, 17, false},
                                           StepParam{InferPhase::kPrefill, 1, 32, true},
                                           StepParam{InferPhase::kPrefill, 3, 7, false}),
                         StepName);

class EagerF32Test : public ::testing::TestWithParam<std::tuple<StepParam, DType>> {};

// The check's f32 step of the case's bf16 or e4m3 matrices (the embedding, norms and cache bf16)
// is the float64 step of the same values, to f32's precision.
TEST_P(EagerF32Test, LogitsAreTheFloat64StepsOfTheSameWeights) {
  if (!libtorch::TorchHasCuda()) GTEST_SKIP() << "LibTorch sees no CUDA device";
  const auto [step, dt] = GetParam();
  const auto [phase, batch, ctx, gqa] = step;
  const InferShape s{TinyLlama(gqa), phase, batch, ctx};
  RunConfig cfg;
  cfg.dtype = dt;
  cfg.seed = 5;
  std::string why;
  const std::optional<std::vector<float>> got = libtorch::EagerF32LogitsGpu(s, cfg, &why);
  ASSERT_TRUE(got) << why;
  const Vec want = Float64Logits(s, cfg.seed, dt, DType::kBF16);
  ASSERT_EQ(got->size(), want.size());
  EXPECT_LT(RelativeL2(*got, want), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Steps, EagerF32Test,
    ::testing::Combine(::testing::Values(StepParam{InferPhase::kDecode, 3, 40, true},
                                         StepParam{InferPhase::kDecode, 2, 9, false},
                                         StepParam{InferPhase::kPrefill, 2, 16, true}),
                       ::testing::Values(DType::kBF16, DType::kFP8E4M3)));

TEST(EagerF32, SaysWhyWhenTheDeviceHasTooLittleMemory) {
  if (!libtorch::TorchHasCuda()) GTEST_SKIP() << "LibTorch sees no CUDA device";
  LlamaConfig huge = TinyLlama(true);
  huge.name = "huge";
  huge.layers = 100000;
  huge.dim = 8192;
  huge.ffn = 32768;
  const InferShape s{huge, InferPhase::kDecode, 1, 8};
  EXPECT_GT(libtorch::EagerF32Bytes(s), 1e14);  // 100 TB: no device has it
  RunConfig cfg;
  cfg.dtype = DType::kBF16;
  std::string why;
  EXPECT_FALSE(libtorch::EagerF32LogitsGpu(s, cfg, &why));
  EXPECT_NE(why.find("needs"), std::string::npos) << why;
  EXPECT_NE(why.find("GiB"), std::string::npos) << why;
}

TEST(TorchInferGpu, RefusesWeightsOtherThanBf16SayingWhy) {
  RunConfig cfg;
  cfg.dtype = DType::kFP8E4M3;
  const Support sup =
      libtorch::TorchInferGpu::Supports({TinyLlama(true), InferPhase::kDecode, 1, 8}, cfg);
  EXPECT_FALSE(sup.ok);
  EXPECT_NE(sup.why.find("bf16"), std::string::npos) << sup.why;
}

}  // namespace
}  // namespace dlb::testing

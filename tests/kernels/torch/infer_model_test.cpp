// The LibTorch model in the GPU's two layouts, run on the CPU against the float64 step: bf16
// weights, cache and residual with the cache written in place (what the GPU op captures), and the
// large models' f32 check (f32 weights over a bf16 cache kept beside the step's own f32 keys).
#include "kernels/torch/infer_model.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/kernels/testing.h"
#include "tests/kernels/infer_testing.h"

namespace dlb::testing {
namespace {

std::vector<float> Logits(const libtorch::InferModel& model) {
  torch::NoGradGuard no_grad;
  const torch::Tensor l = model.Step().contiguous();
  return std::vector<float>(l.data_ptr<float>(), l.data_ptr<float>() + l.numel());
}

class TorchInferModelTest : public ::testing::TestWithParam<StepParam> {};

TEST_P(TorchInferModelTest, Bf16InPlaceIsWithinTheFamilysBf16Tolerance) {
  const auto [phase, batch, ctx, gqa] = GetParam();
  const InferShape s{TinyLlama(gqa), phase, batch, ctx};
  libtorch::InferPlacement where;
  where.weights = torch::TensorOptions().dtype(torch::kBFloat16);
  where.cache_dtype = torch::kBFloat16;
  where.norm_dt = DType::kBF16;
  const auto model =
      libtorch::BuildInferModel(s, 7, where, libtorch::HostInferFills(s, 7, DType::kBF16));
  const std::vector<float> got = Logits(*model);
  EXPECT_LT(RelativeL2(got, Float64Logits(s, 7, DType::kBF16, DType::kBF16)), 3e-2);
  EXPECT_EQ(Logits(*model), got) << "a second step writes the same cache positions";
}

TEST_P(TorchInferModelTest, F32BesideABf16CacheIsTheFloat64Step) {
  const auto [phase, batch, ctx, gqa] = GetParam();
  const InferShape s{TinyLlama(gqa), phase, batch, ctx};
  libtorch::InferPlacement where;
  where.weights = torch::TensorOptions().dtype(torch::kFloat);
  where.cache_dtype = torch::kBFloat16;
  where.norm_dt = DType::kBF16;
  where.append_in_place = false;
  const auto model =
      libtorch::BuildInferModel(s, 7, where, libtorch::HostInferFills(s, 7, DType::kBF16));
  EXPECT_EQ(model->cache.size(3), s.FirstPos()) << "the check holds the prefix alone";
  EXPECT_LT(RelativeL2(Logits(*model), Float64Logits(s, 7, DType::kBF16, DType::kBF16)), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Steps, TorchInferModelTest,
                         ::testing::Values(StepParam{InferPhase::kDecode, 3, 40, true},
                                           StepParam{InferPhase::kDecode, 2, 9, false},
                                           StepParam{InferPhase::kPrefill, 2, 16, true},
                                           StepParam{InferPhase::kPrefill, 1, 8, false}),
                         StepName);

}  // namespace
}  // namespace dlb::testing

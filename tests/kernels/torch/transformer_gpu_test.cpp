// The transformers on the GPU: the tiny configurations against float64 in f32 and in bf16
// autocast, GPT-2 small's graphed step verifying itself (the graph replay against the eager step),
// and a graph that keeps training: after the same number of steps, replays and eager steps reach
// the same loss.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "kernels/cuda/device.h"
#include "kernels/torch/step.h"
#include "kernels/torch/transformer.h"

namespace dlb::libtorch {
namespace {

#define REQUIRE_GPU() \
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device"

TrainShape Shape(const std::string& model, int64_t batch, int64_t seq, bool amp, bool graph) {
  TrainShape s;
  s.model = model;
  s.batch = batch;
  s.seq = seq;
  s.channels = 0;
  s.classes = FindTransformer(model)->vocab;
  s.amp = amp;
  s.graph = graph;
  return s;
}

RunConfig Cfg(bool amp) {
  RunConfig c;
  c.dtype = amp ? DType::kBF16 : DType::kF32;
  return c;
}

class TinyOnGpu : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(TinyOnGpu, OneStepEqualsTheFloat64Reference) {
  REQUIRE_GPU();
  const auto& [model, amp] = GetParam();
  const TrainShape s = TinyShape(Shape(model, 2, 32, amp, false));
  const RunConfig cfg = Cfg(amp);
  const StepResult got = OneStep(s, cfg, Where::kGpu, false);
  const StepResult& ref = ReferenceStep(s, cfg);
  const Verdict v = CompareSteps(got, ref, true, StepTolerance(s, cfg, Where::kGpu), "gpu");
  std::printf("%s %s vs float64: %s\n", model.c_str(), amp ? "amp_bf16" : "f32", v.detail.c_str());
  EXPECT_TRUE(v.ok) << v.detail;
}

INSTANTIATE_TEST_SUITE_P(Gpu, TinyOnGpu,
                         ::testing::Combine(::testing::Values("gpt2_tiny", "bert_tiny"),
                                            ::testing::Bool()));

class FullOnGpu : public ::testing::TestWithParam<std::string> {};

TEST_P(FullOnGpu, TheGraphedStepVerifiesAndKeepsTraining) {
  REQUIRE_GPU();
  const int64_t seq = 256;
  const TrainShape g = Shape(GetParam(), 4, seq, true, true);
  const TrainShape e = Shape(GetParam(), 4, seq, true, false);
  double graphed = 0, eager = 0;
  {
    TorchStepGpu op(g, Cfg(true));
    const Verdict v = op.Verify();
    std::printf("%s graph: %s\n", GetParam().c_str(), v.detail.c_str());
    EXPECT_TRUE(v.ok) << v.detail;
    EXPECT_NE(v.detail.find("graph replay vs eager"), std::string::npos) << v.detail;
    for (int i = 0; i < 5; ++i) op.Run();
    graphed = op.last_loss();
    EXPECT_EQ(op.tokens_per_step(), double(4 * seq));
  }
  {
    TorchStepGpu op(e, Cfg(true));
    for (int i = 0; i < 5; ++i) op.Run();
    eager = op.last_loss();
  }
  // Five AdamW steps on one batch move the loss well away from ln(vocab); replays and eager
  // steps follow the same path up to bf16's reordered sums.
  const double uniform = std::log(double(FindTransformer(GetParam())->vocab));
  std::printf("%s after 5 steps: graph %.5f eager %.5f (ln vocab %.3f)\n", GetParam().c_str(),
              graphed, eager, uniform);
  EXPECT_LT(eager, uniform - 0.5);
  EXPECT_NEAR(graphed, eager, 1e-2 * eager);
}

INSTANTIATE_TEST_SUITE_P(Gpu, FullOnGpu, ::testing::Values("gpt2s", "bert_base"));

}  // namespace
}  // namespace dlb::libtorch

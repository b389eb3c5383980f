// The transformers on the CPU: the tiny configurations' step equals float64, the full models have
// the parameters their configurations say (GPT-2 small's 124M), the FLOP formula on a hand-checked
// case, the CPU op's checks and counters, and what it refuses.
#include "kernels/torch/transformer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "kernels/common/error.h"
#include "kernels/torch/step.h"

namespace dlb::libtorch {
namespace {

TrainShape Shape(const std::string& model, int64_t batch, int64_t seq) {
  TrainShape s;
  s.model = model;
  s.batch = batch;
  s.seq = seq;
  s.channels = 0;
  s.classes = FindTransformer(model) ? FindTransformer(model)->vocab : 256;
  return s;
}

int64_t Registered(const TransformerConfig& c) {
  int64_t n = 0;
  for (const auto& p : MakeTransformer(c, 1)->parameters()) n += p.numel();
  return n;
}

class TinyModels : public ::testing::TestWithParam<std::string> {};

TEST_P(TinyModels, OneF32StepEqualsTheFloat64Reference) {
  RunConfig cfg;
  const TrainShape s = TinyShape(Shape(GetParam(), 4, 128));
  EXPECT_EQ(s.batch, kVerifyBatch);
  EXPECT_EQ(s.seq, kVerifySeq);
  const StepResult got = OneStep(s, cfg, Where::kCpu, false);
  const StepResult& ref = ReferenceStep(s, cfg);
  const Verdict v = CompareSteps(got, ref, true, StepTolerance(s, cfg, Where::kCpu), "cpu");
  std::printf("%s f32 vs float64: %s\n", s.model.c_str(), v.detail.c_str());
  EXPECT_TRUE(v.ok) << v.detail;
  const TransformerConfig& tiny = *FindTransformer(s.model);
  EXPECT_EQ(ref.grads.size(), size_t(ParamCount(tiny)));
  EXPECT_EQ(ref.update.size(), ref.grads.size());
  // Seeded, untrained: near ln(vocab).
  EXPECT_NEAR(ref.loss, std::log(double(tiny.vocab)), 0.1 * std::log(double(tiny.vocab)));
  // AdamW's first update is lr * g / (|g| + eps) + lr * wd * p: no element moves by more than
  // lr (1 + wd |p|), and most move by nearly lr.
  double largest = 0;
  for (float u : ref.update) largest = std::max(largest, double(std::fabs(u)));
  EXPECT_LT(largest, 6e-4 * 1.01);
  EXPECT_GT(largest, 6e-4 * 0.9);
}

// bf16 autocast (CPU autocast: the same bf16 rounding of every matmul's inputs as on the GPU)
// within the tolerance the GPU's amp_bf16 cases are verified at. GPT only: LibTorch 1.13's CPU
// autocast stops the BERT head with "expected scalar type BFloat16 but found Float" (CUDA's
// autocast, which the GPU cases run, casts all of linear's operands).
TEST(Transformer, Bf16AutocastIsWithinItsTolerance) {
  RunConfig cfg;
  TrainShape s = TinyShape(Shape("gpt2s", 4, 128));
  s.amp = true;
  const StepResult got = OneStep(s, cfg, Where::kCpu, false);
  const StepResult& ref = ReferenceStep(s, cfg);
  const Verdict v = CompareSteps(got, ref, true, StepTolerance(s, cfg, Where::kGpu), "cpu bf16");
  std::printf("%s bf16 autocast vs float64: %s\n", s.model.c_str(), v.detail.c_str());
  EXPECT_TRUE(v.ok) << v.detail;
}

// 40 AdamW steps (nanoGPT's lr 6e-4) on one fixed batch: the loss falls by a third.
TEST_P(TinyModels, LearnsOneFixedBatch) {
  TrainShape s = Shape(GetParam(), 2, 32);
  const std::vector<double> losses = TrainLosses(s, RunConfig{}, Where::kCpu, 40);
  ASSERT_EQ(losses.size(), 40u);
  std::printf("%s: loss %.3f -> %.3f\n", s.model.c_str(), losses.front(), losses.back());
  EXPECT_LT(losses.back(), losses.front() * 2 / 3);
}

INSTANTIATE_TEST_SUITE_P(Transformers, TinyModels, ::testing::Values("gpt2_tiny", "bert_tiny"));

TEST(Transformer, Gpt2SmallHasItsKnownParameterCount) {
  const TransformerConfig& c = *FindTransformer("gpt2s");
  // wte 50304 x 768 + wpe 1024 x 768 + 12 blocks of 7,087,872 + ln_f 1536, the head tied.
  EXPECT_EQ(ParamCount(c), 124475904);
  EXPECT_EQ(MatmulParamCount(c), 124475904 - 1024 * 768);  // nanoGPT prints 123.69M
  const int64_t n = Registered(c);
  std::printf("gpt2s: %lld parameters registered, %lld by the formula\n", static_cast<long long>(n),
              static_cast<long long>(ParamCount(c)));
  EXPECT_EQ(n, ParamCount(c));
}

TEST(Transformer, BertBaseHasItsParameterCount) {
  const TransformerConfig& c = *FindTransformer("bert_base");
  // Embeddings 30522 + 512 + 2 rows of 768 and a LayerNorm; 12 blocks; the MLM head's dense,
  // LayerNorm and bias, its decoder tied: BERT-base's ~110M.
  EXPECT_EQ(ParamCount(c), 23440896 + 393216 + 1536 + 1536 + 85054464 + 590592 + 1536 + 30522);
  EXPECT_EQ(Registered(c), ParamCount(c));
  for (const char* tiny : {"gpt2_tiny", "bert_tiny"})
    EXPECT_EQ(Registered(*FindTransformer(tiny)), ParamCount(*FindTransformer(tiny))) << tiny;
}

TEST(Transformer, FlopsPerTokenIsNanoGptsEstimate) {
  // 6 x 123,689,472 + 12 x 12 layers x 768 (H x Q) x 1024 = 742,136,832 + 113,246,208.
  EXPECT_DOUBLE_EQ(TrainFlopsPerToken(*FindTransformer("gpt2s"), 1024), 855383040.0);
  // At seq 128 the attention term is an eighth of that.
  EXPECT_DOUBLE_EQ(TrainFlopsPerToken(*FindTransformer("gpt2s"), 128),
                   742136832.0 + 113246208.0 / 8);
}

// The op on the tiny GPT (GPT-2 small's code; on this CPU's reference BLAS a GPT-2 small step
// takes seconds a token).
TEST(Transformer, TheCpuOpVerifiesAndCountsTokens) {
  SetTorchThreads(2);
  const TrainShape s = Shape("gpt2_tiny", 1, 16);
  RunConfig cfg;
  TorchStepCpu op(s, cfg);
  const Verdict v = op.Verify();
  EXPECT_TRUE(v.ok) << v.detail;
  EXPECT_NE(v.detail.find("gpt2_tiny"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("ln vocab"), std::string::npos) << v.detail;
  op.Run();
  op.MeasurePhases();
  bool phases = false;
  for (const auto& [name, value] : op.Counters()) phases = phases || (name == "opt_s" && value > 0);
  EXPECT_TRUE(phases);
  EXPECT_EQ(op.tokens_per_step(), 16.0);
  EXPECT_DOUBLE_EQ(op.cost().flops, TrainFlopsPerToken(*FindTransformer("gpt2_tiny"), 16) * 16);
  EXPECT_EQ(op.cost().items, 1.0);
  EXPECT_NE(op.label().find("6 N + 12 L H Q T"), std::string::npos) << op.label();
}

TEST(Transformer, BadInputIsAnErrorNotACrash) {
  RunConfig cfg;
  try {
    TorchStepCpu op(Shape("gpt3", 1, 16), cfg);
    ADD_FAILURE() << "no error for an unknown transformer";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown transformer 'gpt3'"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(TorchStepCpu::Supports(Shape("gpt2s", 1, 2048), cfg).ok);
  TrainShape infer = Shape("gpt2s", 1, 16);
  infer.pass = Pass::kInfer;
  EXPECT_FALSE(TorchStepCpu::Supports(infer, cfg).ok);
  TrainShape wrong_vocab = Shape("gpt2_tiny", 1, 16);
  wrong_vocab.classes = 100;
  EXPECT_THROW(TorchStepCpu(wrong_vocab, cfg), Error);
  TrainShape cnn;
  cnn.model = "resnet18";
  EXPECT_THROW(TinyShape(cnn), Error);
}

}  // namespace
}  // namespace dlb::libtorch

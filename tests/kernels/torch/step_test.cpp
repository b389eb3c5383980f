// LibTorch steps on the CPU: one f32 step equals the float64 reference, a model learns one fixed
// batch, and the CPU op checks itself, measures its phases and refuses what it cannot run.
#include "kernels/torch/step.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dlb::libtorch {
namespace {

TrainShape Shape(const std::string& model, int64_t batch) {
  TrainShape s;
  s.model = model;
  s.batch = batch;
  if (model == "mlp") {
    s.channels = 0;
    s.widths = {1000, 512, 256, 2};
    s.classes = 2;
  } else if (model == "resnet18_cifar") {
    s.image = 32;
    s.classes = 10;
  } else {
    s.model = "catdog";
    s.image = 64;
    s.classes = 2;
  }
  return s;
}

class SmallModels : public ::testing::TestWithParam<std::string> {};

TEST_P(SmallModels, OneF32StepEqualsTheFloat64Reference) {
  RunConfig cfg;
  for (Pass pass : {Pass::kTrain, Pass::kInfer}) {
    TrainShape s = Shape(GetParam(), 4);
    s.pass = pass;
    const StepResult got = OneStep(s, cfg, Where::kCpu, false);
    const StepResult& ref = ReferenceStep(s, cfg);
    const Verdict v = CompareSteps(got, ref, pass == Pass::kTrain,
                                   StepTolerance(s, cfg, Where::kCpu), "cpu");
    EXPECT_TRUE(v.ok) << v.detail;
    if (pass == Pass::kTrain) {
      EXPECT_GT(ref.loss, 0);
      EXPECT_FALSE(ref.grads.empty());
      EXPECT_EQ(ref.grads.size(), ref.update.size());
    } else {
      EXPECT_EQ(ref.logits.size(), size_t(4 * s.classes));
    }
  }
}

// 30 SGD steps (lr 0.01, momentum 0.9) on one fixed batch of 8: every model memorises it. The
// factors are what each model reaches with margin: the MLP (2 classes, 1000 random features) to
// below 1/4 of its first loss, the CNNs to below 1/10.
TEST_P(SmallModels, LearnsOneFixedBatch) {
  const std::vector<double> losses = TrainLosses(Shape(GetParam(), 8), RunConfig{}, Where::kCpu, 30);
  ASSERT_EQ(losses.size(), 30u);
  const double factor = GetParam() == "mlp" ? 4 : 10;
  EXPECT_LT(losses.back(), losses.front() / factor)
      << "first " << losses.front() << " last " << losses.back();
}

TEST_P(SmallModels, TheOpVerifiesMeasuresItsPhasesAndTrains) {
  TrainShape s = Shape(GetParam(), 4);
  TorchStepCpu op(s, RunConfig{});
  const Verdict v = op.Verify();
  EXPECT_TRUE(v.ok) << v.detail;
  EXPECT_EQ(v.disposition, Disposition::kVerified);
  EXPECT_EQ(v.metric, "rel_l2");
  EXPECT_LE(v.error, v.tolerance);
  op.MeasurePhases();
  std::map<std::string, double> c;
  for (const auto& [k, val] : op.Counters()) c[k] = val;
  EXPECT_GT(c["fwd_s"], 0);
  EXPECT_GT(c["bwd_s"], 0);
  EXPECT_GT(c["opt_s"], 0);
  EXPECT_GT(c["peak_mem_bytes"], 0);
  EXPECT_EQ(op.cost().items, 4);
  EXPECT_GT(op.cost().flops, 0);
  op.Run();
  op.Run();
}

INSTANTIATE_TEST_SUITE_P(Cpu, SmallModels, ::testing::Values("mlp", "resnet18_cifar", "catdog64"));

TEST(TorchStepCpu, RefusesWhatTheCpuPathDoesNotRun) {
  TrainShape s = Shape("mlp", 4);
  RunConfig cfg;
  EXPECT_TRUE(TorchStepCpu::Supports(s, cfg).ok);
  s.graph = true;
  EXPECT_FALSE(TorchStepCpu::Supports(s, cfg).ok);
  s.graph = false;
  s.amp = true;
  EXPECT_FALSE(TorchStepCpu::Supports(s, cfg).ok);
  s.amp = false;
  s.batch = 0;
  EXPECT_FALSE(TorchStepCpu::Supports(s, cfg).ok);
}

// The threads are the process's, set once before any case (benchmarks/train.cpp): building a case
// leaves them as they are, whatever its RunConfig says, and its label names them.
TEST(TorchStepCpu, BuildingACaseLeavesTheProcesssThreadsAlone) {
  const int before = TorchThreads();
  SetTorchThreads(1);
  RunConfig cfg;
  cfg.threads = 2;
  const TorchStepCpu op(Shape("mlp", 2), cfg);
  EXPECT_EQ(TorchThreads(), 1);
  EXPECT_NE(op.label().find("CPU, 1 threads"), std::string::npos) << op.label();
  SetTorchThreads(before);
  EXPECT_EQ(TorchThreads(), before);
}

TEST(TorchStepCpu, AWrongStepFailsItsCheck) {
  TrainShape s = Shape("mlp", 4);
  StepResult got = OneStep(s, RunConfig{}, Where::kCpu, false);
  const StepResult& ref = ReferenceStep(s, RunConfig{});
  got.grads[got.grads.size() / 2] += 1.0f;  // one wrong gradient element
  const Verdict v = CompareSteps(got, ref, true, {1e-4, 1e-2}, "cpu");
  EXPECT_FALSE(v.ok) << v.detail;
  EXPECT_NE(v.detail.find("grads"), std::string::npos);
}

TEST(TorchStepCpu, TheClassifierIsGatedWhereTheWholeGradientIsOnlyReported) {
  // bf16 autocast's tolerances: the whole gradient reported (+inf), the classifier's gated.
  TrainShape s = Shape("mlp", 4);
  const StepResult& ref = ReferenceStep(s, RunConfig{});
  EXPECT_EQ(ref.head, size_t(256 * 2 + 2)) << "the last Linear's weight and bias";
  StepResult got = OneStep(s, RunConfig{}, Where::kCpu, false);
  const StepTolerances amp{2e-2, INFINITY, 0.1};
  Verdict v = CompareSteps(got, ref, true, amp, "cpu");
  EXPECT_TRUE(v.ok) << v.detail;
  EXPECT_NE(v.detail.find("classifier grads"), std::string::npos) << v.detail;
  got.grads[got.grads.size() / 2] += 100.0f;  // far off, but not the classifier's: reported
  EXPECT_TRUE(CompareSteps(got, ref, true, amp, "cpu").ok);
  got.grads[0] = NAN;  // a NaN anywhere fails, reported part or not
  EXPECT_FALSE(CompareSteps(got, ref, true, amp, "cpu").ok);
  got.grads[0] = ref.grads[0];
  got.grads.back() += 1.0f;  // the classifier's last bias gradient
  v = CompareSteps(got, ref, true, amp, "cpu");
  EXPECT_FALSE(v.ok) << v.detail;
  EXPECT_NE(v.detail.find("classifier grads"), std::string::npos) << v.detail;
}

TEST(TorchStepCpu, ForwardFlopsMatchTheKnownCounts) {
  TrainShape mlp = Shape("mlp", 1);
  EXPECT_DOUBLE_EQ(ForwardFlopsPerSample(mlp), 2.0 * (1000 * 512 + 512 * 256 + 256 * 2));
  // The CIFAR ResNet-18's convs: 0.555 G multiply-adds counting every tap (conv_resnet18_cifar.csv's
  // header), 0.482 G at the taps inside the input (the padding's taps do no work), + FC.
  const double cifar = ForwardFlopsPerSample(Shape("resnet18_cifar", 1)) / 2;
  EXPECT_NEAR(cifar / 1e9, 0.482, 0.001);
}

}  // namespace
}  // namespace dlb::libtorch

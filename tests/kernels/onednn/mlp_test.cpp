#include "kernels/onednn/mlp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "kernels/common/train.h"
#include "kernels/reference/mlp.h"
#include "tests/kernels/testing.h"

namespace dlb::onednn {
namespace {

using namespace ::dlb::testing;  // NOLINT: test helpers

// Odd widths catch stride and transpose mix-ups; the suite's own MLP at a small batch.
const TrainShape kOdd = MlpShape({37, 24, 17, 5}, 7);
const TrainShape kSuite = MlpShape({1000, 512, 256, 2}, 16);

RunConfig Config() {
  RunConfig cfg;
  cfg.threads = 2;
  cfg.seed = 11;
  return cfg;
}

void ExpectStepsMatchReference(const TrainShape& s, int steps) {
  SCOPED_TRACE(std::to_string(steps) + " steps of " + std::to_string(s.widths.size() - 1) +
               " layers at batch " + std::to_string(s.batch));
  const RunConfig cfg = Config();
  ASSERT_TRUE(NativeMlpStep::Supports(s, cfg).ok) << NativeMlpStep::Supports(s, cfg).why;
  NativeMlpStep op(s, cfg);
  for (int i = 0; i < steps; ++i) op.Run();
  const MlpSnapshot got = op.Snapshot();
  const MlpStepResult ref = ReferenceMlpSteps(s, cfg.seed, steps);
  const Verdict v = CompareMlpStep(got, ref, s.pass, 1e-5, "test");
  EXPECT_TRUE(v.ok) << v.detail << " | " << op.label();
  EXPECT_EQ(v.disposition, Disposition::kVerified);
  for (const auto& layer : got.grad_weight)
    for (float g : layer) ASSERT_TRUE(std::isfinite(g));
}

TEST(OneDnnNativeMlp, OneStepMatchesReference) {
  ExpectStepsMatchReference(kOdd, 1);
  ExpectStepsMatchReference(kSuite, 1);
}

TEST(OneDnnNativeMlp, ThreeStepsWithMomentumMatchReference) {
  ExpectStepsMatchReference(kOdd, 3);
  ExpectStepsMatchReference(kSuite, 3);
}

TEST(OneDnnNativeMlp, InferComputesTheLogitsAndLeavesTheWeights) {
  const TrainShape s = MlpShape({37, 24, 17, 5}, 7, Pass::kInfer);
  NativeMlpStep op(s, Config());
  op.Run();
  op.Run();
  const MlpSnapshot got = op.Snapshot();
  const MlpStepResult ref = ReferenceMlpSteps(s, Config().seed, 1);
  EXPECT_LT(RelL2({got.logits}, std::vector<std::vector<double>>{ref.logits}), 1e-5);
  EXPECT_TRUE(got.grad_weight.empty());
  EXPECT_EQ(got.weight, SeededMlpParams(Config().seed, s.widths).weight);
}

TEST(OneDnnNativeMlp, SingleLayerHasNoReluAndNoDataGradient) {
  ExpectStepsMatchReference(MlpShape({9, 3}, 4), 2);
}

TEST(OneDnnNativeMlp, VerifyPassesAndLeavesTheSeededState) {
  for (const TrainShape& s : {kSuite, MlpShape({1000, 512, 256, 2}, 16, Pass::kInfer)}) {
    NativeMlpStep op(s, Config());
    op.Run();  // Verify starts from the seeded state whatever ran before
    const Verdict v = op.Verify();
    EXPECT_TRUE(v.ok) << v.detail;
    EXPECT_EQ(v.disposition, Disposition::kVerified);
    EXPECT_EQ(v.metric, "rel_l2");
    EXPECT_LE(v.error, v.tolerance);
    EXPECT_DOUBLE_EQ(v.tolerance, 1e-5);
    EXPECT_GT(v.checked, 0u);
    EXPECT_EQ(v.checked, v.of);
    EXPECT_NE(v.detail.find("worst "), std::string::npos) << v.detail;
    const MlpParams seeded = SeededMlpParams(Config().seed, s.widths);
    EXPECT_EQ(op.Snapshot().weight, seeded.weight);
    EXPECT_EQ(op.Snapshot().bias, seeded.bias);
  }
  // After Verify the next Run is a first step again: momentum buffers are back at zero.
  NativeMlpStep fresh(kOdd, Config()), verified(kOdd, Config());
  verified.Run();
  ASSERT_TRUE(verified.Verify().ok);
  fresh.Run();
  verified.Run();
  EXPECT_EQ(fresh.Snapshot().weight, verified.Snapshot().weight);
  EXPECT_EQ(fresh.Snapshot().loss, verified.Snapshot().loss);
}

TEST(OneDnnNativeMlp, MeasurePhasesFillsCountersAndRestores) {
  NativeMlpStep op(kOdd, Config());
  std::map<std::string, double> before;
  for (const auto& [k, v] : op.Counters()) before[k] = v;
  EXPECT_EQ(before.count("fwd_s"), 0u);
  EXPECT_GT(before["peak_mem_bytes"], 0);
  op.MeasurePhases();
  std::map<std::string, double> c;
  for (const auto& [k, v] : op.Counters()) c[k] = v;
  for (const char* k : {"fwd_s", "bwd_s", "opt_s", "peak_mem_bytes"}) {
    ASSERT_EQ(c.count(k), 1u) << k;
    EXPECT_GT(c[k], 0) << k;
  }
  EXPECT_EQ(op.Snapshot().weight, SeededMlpParams(Config().seed, kOdd.widths).weight);

  NativeMlpStep infer(MlpShape({37, 24, 17, 5}, 7, Pass::kInfer), Config());
  infer.MeasurePhases();
  std::map<std::string, double> ic;
  for (const auto& [k, v] : infer.Counters()) ic[k] = v;
  EXPECT_EQ(ic.count("fwd_s"), 1u);
  EXPECT_EQ(ic.count("bwd_s"), 0u);
}

TEST(OneDnnNativeMlp, CostAndLabel) {
  NativeMlpStep op(kSuite, Config());
  const double macs = 1000.0 * 512 + 512.0 * 256 + 256.0 * 2;
  EXPECT_EQ(op.cost().flops, 2 * 16 * macs * 3);
  EXPECT_EQ(op.cost().items, 16);
  EXPECT_EQ(op.label().rfind("native mlp 1000-512-256-2: oneDNN matmul ", 0), 0u) << op.label();
  EXPECT_NE(op.label().find("threads"), std::string::npos) << op.label();
  NativeMlpStep infer(MlpShape({1000, 512, 256, 2}, 16, Pass::kInfer), Config());
  EXPECT_EQ(infer.cost().flops, 2 * 16 * macs);
}

TEST(OneDnnNativeMlp, SupportsRejectsWhatItCannotRun) {
  const RunConfig cfg = Config();
  EXPECT_TRUE(NativeMlpStep::Supports(kSuite, cfg).ok);
  ExpectBareReason(NativeMlpStep::Supports(MlpShape({5}, 2), cfg));
  ExpectBareReason(NativeMlpStep::Supports(MlpShape({5, 0, 2}, 2), cfg));
  ExpectBareReason(NativeMlpStep::Supports(MlpShape({5, 2}, 0), cfg));
  TrainShape other = kSuite;
  other.model = "resnet18_cifar";
  ExpectBareReason(NativeMlpStep::Supports(other, cfg));
  TrainShape amp = kSuite;
  amp.amp = true;
  ExpectBareReason(NativeMlpStep::Supports(amp, cfg));
  TrainShape classes = kSuite;
  classes.classes = 10;
  ExpectBareReason(NativeMlpStep::Supports(classes, cfg));
  for (DType dt : {DType::kTF32, DType::kBF16, DType::kF16}) {
    RunConfig c = cfg;
    c.dtype = dt;
    ExpectBareReason(NativeMlpStep::Supports(kSuite, c));
    EXPECT_THROW(NativeMlpStep(kSuite, c), Unsupported);
  }
  EXPECT_THROW(NativeMlpStep(MlpShape({5, 2}, 0), cfg), Unsupported);
}

}  // namespace
}  // namespace dlb::onednn

#include "kernels/cublas/mlp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "kernels/common/train.h"
#include "kernels/cuda/device.h"
#include "kernels/reference/mlp.h"
#include "tests/kernels/testing.h"

namespace dlb::cublas {
namespace {

using namespace ::dlb::testing;  // NOLINT: test helpers

// Odd widths and batch catch leading-dimension and transpose mix-ups, and give the ReLU
// bit-masks rows that are not a multiple of 128; then the suite's own MLP.
const TrainShape kOdd = MlpShape({37, 24, 17, 5}, 7);
const TrainShape kSuite = MlpShape({1000, 512, 256, 2}, 64);

RunConfig Config(DType dt = DType::kF32) {
  RunConfig cfg;
  cfg.dtype = dt;
  cfg.seed = 11;
  return cfg;
}

double Tol(DType dt) { return dt == DType::kTF32 ? 5e-2 : 1e-5; }

class CublasNativeMlpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  }

  static void ExpectStepsMatchReference(const TrainShape& s, DType dt, int steps) {
    SCOPED_TRACE(std::string(Name(dt)) + " " + std::to_string(steps) + " steps, graph " +
                 std::to_string(s.graph) + ", " + std::to_string(s.widths.size() - 1) +
                 " layers at batch " + std::to_string(s.batch));
    const RunConfig cfg = Config(dt);
    ASSERT_TRUE(NativeMlpStep::Supports(s, cfg).ok) << NativeMlpStep::Supports(s, cfg).why;
    NativeMlpStep op(s, cfg);
    for (int i = 0; i < steps; ++i) op.Run();
    const MlpSnapshot got = op.Snapshot();
    const Verdict v =
        CompareMlpStep(got, ReferenceMlpSteps(s, cfg.seed, steps), s.pass, Tol(dt), "test");
    EXPECT_TRUE(v.ok) << v.detail << " | " << op.label();
  }
};

TEST_F(CublasNativeMlpTest, OneStepMatchesReferenceEagerAndGraph) {
  for (DType dt : {DType::kF32, DType::kTF32})
    for (bool graph : {false, true})
      for (TrainShape s : {kOdd, kSuite}) {
        s.graph = graph;
        ExpectStepsMatchReference(s, dt, 1);
      }
}

TEST_F(CublasNativeMlpTest, ThreeStepsWithMomentumMatchReferenceEagerAndGraph) {
  for (bool graph : {false, true})
    for (TrainShape s : {kOdd, kSuite}) {
      s.graph = graph;
      ExpectStepsMatchReference(s, DType::kF32, 3);
    }
}

TEST_F(CublasNativeMlpTest, InferComputesTheLogitsAndLeavesTheWeights) {
  for (bool graph : {false, true})
    for (DType dt : {DType::kF32, DType::kTF32}) {
      const TrainShape s = MlpShape({1000, 512, 256, 2}, 33, Pass::kInfer, graph);
      NativeMlpStep op(s, Config(dt));
      op.Run();
      op.Run();
      const MlpSnapshot got = op.Snapshot();
      const MlpStepResult ref = ReferenceMlpSteps(s, Config(dt).seed, 1);
      EXPECT_LT(RelL2({got.logits}, std::vector<std::vector<double>>{ref.logits}), Tol(dt))
          << op.label();
      EXPECT_TRUE(got.grad_weight.empty());
      EXPECT_EQ(got.weight, SeededMlpParams(Config().seed, s.widths).weight);
    }
}

TEST_F(CublasNativeMlpTest, SingleLayerHasNoReluAndNoDataGradient) {
  ExpectStepsMatchReference(MlpShape({9, 3}, 4), DType::kF32, 2);
  ExpectStepsMatchReference(MlpShape({9, 3}, 4, Pass::kTrain, true), DType::kF32, 2);
}

TEST_F(CublasNativeMlpTest, VerifyPassesChecksTheGraphAndLeavesTheSeededState) {
  for (bool graph : {false, true})
    for (Pass pass : {Pass::kTrain, Pass::kInfer}) {
      const TrainShape s = MlpShape({1000, 512, 256, 2}, 64, pass, graph);
      NativeMlpStep op(s, Config());
      op.Run();  // Verify starts from the seeded state whatever ran before
      const Verdict v = op.Verify();
      EXPECT_TRUE(v.ok) << v.detail;
      EXPECT_EQ(v.disposition, Disposition::kVerified);
      EXPECT_EQ(v.metric, "rel_l2");
      EXPECT_LE(v.error, v.tolerance);
      EXPECT_EQ(v.checked, v.of);
      EXPECT_NE(v.detail.find("worst "), std::string::npos) << v.detail;
      EXPECT_EQ(v.detail.find("graph replay") != std::string::npos, graph) << v.detail;
      const MlpParams seeded = SeededMlpParams(Config().seed, s.widths);
      EXPECT_EQ(op.Snapshot().weight, seeded.weight);
      EXPECT_EQ(op.Snapshot().bias, seeded.bias);
    }
  // After Verify the next Run is a first step again: momentum buffers are back at zero.
  TrainShape s = kSuite;
  s.graph = true;
  NativeMlpStep fresh(s, Config()), verified(s, Config());
  verified.Run();
  ASSERT_TRUE(verified.Verify().ok);
  fresh.Run();
  verified.Run();
  EXPECT_EQ(fresh.Snapshot().weight, verified.Snapshot().weight);
  EXPECT_EQ(fresh.Snapshot().loss, verified.Snapshot().loss);
}

TEST_F(CublasNativeMlpTest, GraphReplaysEqualEagerSteps) {
  TrainShape eager_shape = kSuite, graph_shape = kSuite;
  graph_shape.graph = true;
  NativeMlpStep eager(eager_shape, Config()), graph(graph_shape, Config());
  for (int i = 0; i < 4; ++i) {
    eager.Run();
    graph.Run();
  }
  const MlpSnapshot e = eager.Snapshot(), g = graph.Snapshot();
  EXPECT_LE(RelL2(g.weight, e.weight), 1e-6);
  EXPECT_LE(RelL2(g.grad_weight, e.grad_weight), 1e-6);
  EXPECT_NEAR(g.loss, e.loss, 1e-6 * std::abs(e.loss));
}

TEST_F(CublasNativeMlpTest, MeasurePhasesFillsCountersAndRestores) {
  TrainShape s = kSuite;
  s.graph = true;
  NativeMlpStep op(s, Config());
  op.MeasurePhases();
  std::map<std::string, double> c;
  for (const auto& [k, v] : op.Counters()) c[k] = v;
  for (const char* k : {"fwd_s", "bwd_s", "opt_s", "peak_mem_bytes"}) {
    ASSERT_EQ(c.count(k), 1u) << k;
    EXPECT_GT(c[k], 0) << k;
  }
  EXPECT_EQ(op.Snapshot().weight, SeededMlpParams(Config().seed, s.widths).weight);
}

TEST_F(CublasNativeMlpTest, CostAndLabel) {
  TrainShape s = kSuite;
  s.graph = true;
  NativeMlpStep op(s, Config(DType::kTF32));
  const double macs = 1000.0 * 512 + 512.0 * 256 + 256.0 * 2;
  EXPECT_EQ(op.cost().flops, 2 * 64 * macs * 3);
  EXPECT_EQ(op.cost().items, 64);
  EXPECT_EQ(op.label().rfind("native mlp 1000-512-256-2: cuBLASLt ", 0), 0u) << op.label();
  EXPECT_NE(op.label().find("graph"), std::string::npos) << op.label();
  EXPECT_NE(op.label().find("32F_FAST_TF32"), std::string::npos) << op.label();
}

TEST(CublasNativeMlpSupport, RejectsWhatItCannotRun) {
  const RunConfig cfg = Config();
  ExpectBareReason(NativeMlpStep::Supports(MlpShape({5}, 2), cfg));
  ExpectBareReason(NativeMlpStep::Supports(MlpShape({5, 0, 2}, 2), cfg));
  ExpectBareReason(NativeMlpStep::Supports(MlpShape({5, 2}, 0), cfg));
  TrainShape amp = kSuite;
  amp.amp = true;
  ExpectBareReason(NativeMlpStep::Supports(amp, cfg));
  TrainShape other = kSuite;
  other.model = "resnet18_cifar";
  ExpectBareReason(NativeMlpStep::Supports(other, cfg));
  for (DType dt : {DType::kBF16, DType::kF16})
    ExpectBareReason(NativeMlpStep::Supports(kSuite, Config(dt)));
  const Support f32 = NativeMlpStep::Supports(kSuite, cfg);
  if (cuda::DeviceCount() == 0) {
    ExpectBareReason(f32);
    EXPECT_EQ(f32.why.find("no CUDA device"), 0u) << f32.why;
    EXPECT_THROW(NativeMlpStep(kSuite, cfg), Unsupported);
  } else {
    EXPECT_TRUE(f32.ok) << f32.why;
  }
}

}  // namespace
}  // namespace dlb::cublas

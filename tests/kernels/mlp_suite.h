// The tests every backend's native MLP step must pass, written once as a typed suite. A backend's
// test file describes its step in an Ops struct and instantiates the suite:
//
//   INSTANTIATE_TYPED_TEST_SUITE_P(Cublas, MlpSuite, CublasMlpOps, OpsName);
//
// so each test binary links only its own backend. Include this header from one file per binary
// (it defines tests). What an Ops struct gives:
//   using Step                         the backend's NativeMlpStep
//   kName, HasDevice()                 names the instantiation; false skips every test
//   Config(dtype)                      the run configuration (seed 11) the tests build it with
//   StepDTypes()                       the dtypes a step is checked in, f32 first; the last is the
//                                      one the label test builds
//   Graphs()                           the graph settings to check ({false}: the step has none);
//   the
//                                      last is the one the label and phase tests build
//   Tolerance(dtype)                   the step's tolerance against the reference
//   kSuiteBatch                        the batch the suite's own MLP is checked at
//   InferShape()                       the forward-only case
//   PhaseShape()                       the case MeasurePhases and the restart after Verify run
//   kLabelPrefix, CheckLabel(label)    what the label starts with, and what else it must say
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "kernels/common/op.h"
#include "kernels/common/train.h"
#include "kernels/common/verdict.h"
#include "kernels/reference/mlp.h"
#include "tests/kernels/testing.h"

namespace dlb::testing {

// Odd widths and batch catch leading-dimension and transpose mix-ups (and give a GPU step's ReLU
// bit-masks rows that are not a multiple of 128); then the suite's own MLP.
inline TrainShape OddMlp() { return MlpShape({37, 24, 17, 5}, 7); }
inline TrainShape SuiteMlp(int64_t batch, Pass pass = Pass::kTrain, bool graph = false) {
  return MlpShape({1000, 512, 256, 2}, batch, pass, graph);
}

// The configuration the tests build a step with: seed 11, the backend's threads.
inline RunConfig MlpConfig(DType dt, int threads = 0) {
  RunConfig cfg;
  cfg.dtype = dt;
  cfg.threads = threads;
  cfg.seed = 11;
  return cfg;
}

// What no native step runs, whatever the device or dtype: each says why in a bare reason.
template <class Step>
void ExpectRejectsMalformedMlps(const TrainShape& suite, const RunConfig& cfg) {
  ExpectBareReason(Step::Supports(MlpShape({5}, 2), cfg));
  ExpectBareReason(Step::Supports(MlpShape({5, 0, 2}, 2), cfg));
  ExpectBareReason(Step::Supports(MlpShape({5, 2}, 0), cfg));
  TrainShape amp = suite;
  amp.amp = true;
  ExpectBareReason(Step::Supports(amp, cfg));
  TrainShape other = suite;
  other.model = "resnet18_cifar";
  ExpectBareReason(Step::Supports(other, cfg));
}

template <class Ops>
void ExpectStepsMatchReference(const TrainShape& s, DType dt, int steps) {
  SCOPED_TRACE(std::string(Name(dt)) + " " + std::to_string(steps) + " steps, graph " +
               std::to_string(s.graph) + ", " + std::to_string(s.widths.size() - 1) +
               " layers at batch " + std::to_string(s.batch));
  using Step = typename Ops::Step;
  const RunConfig cfg = Ops::Config(dt);
  ASSERT_TRUE(Step::Supports(s, cfg).ok) << Step::Supports(s, cfg).why;
  Step op(s, cfg);
  for (int i = 0; i < steps; ++i) op.Run();
  const MlpSnapshot got = op.Snapshot();
  const Verdict v = CompareMlpStep(got, ReferenceMlpSteps(s, cfg.seed, steps), s.pass,
                                   Ops::Tolerance(dt), "test");
  EXPECT_TRUE(v.ok) << v.detail << " | " << op.label();
  EXPECT_EQ(v.disposition, Disposition::kVerified);
  for (const auto& layer : got.grad_weight)
    for (float g : layer) ASSERT_TRUE(std::isfinite(g));
}

inline std::map<std::string, double> CounterMap(
    const std::vector<std::pair<std::string, double>>& counters) {
  std::map<std::string, double> m;
  for (const auto& [k, v] : counters) m[k] = v;
  return m;
}

template <class Ops>
class MlpSuite : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Ops::HasDevice()) GTEST_SKIP() << "no CUDA device";
  }
};

TYPED_TEST_SUITE_P(MlpSuite);

TYPED_TEST_P(MlpSuite, OneStepMatchesReference) {
  for (DType dt : TypeParam::StepDTypes())
    for (bool graph : TypeParam::Graphs())
      for (TrainShape s : {OddMlp(), SuiteMlp(TypeParam::kSuiteBatch)}) {
        s.graph = graph;
        ExpectStepsMatchReference<TypeParam>(s, dt, 1);
      }
}

TYPED_TEST_P(MlpSuite, ThreeStepsWithMomentumMatchReference) {
  for (bool graph : TypeParam::Graphs())
    for (TrainShape s : {OddMlp(), SuiteMlp(TypeParam::kSuiteBatch)}) {
      s.graph = graph;
      ExpectStepsMatchReference<TypeParam>(s, DType::kF32, 3);
    }
}

TYPED_TEST_P(MlpSuite, InferComputesTheLogitsAndLeavesTheWeights) {
  const uint64_t seed = TypeParam::Config(DType::kF32).seed;
  for (bool graph : TypeParam::Graphs())
    for (DType dt : TypeParam::StepDTypes()) {
      TrainShape s = TypeParam::InferShape();
      s.graph = graph;
      typename TypeParam::Step op(s, TypeParam::Config(dt));
      op.Run();
      op.Run();
      const MlpSnapshot got = op.Snapshot();
      const MlpStepResult ref = ReferenceMlpSteps(s, seed, 1);
      EXPECT_LT(RelL2({got.logits}, std::vector<std::vector<double>>{ref.logits}),
                TypeParam::Tolerance(dt))
          << op.label();
      EXPECT_TRUE(got.grad_weight.empty());
      EXPECT_EQ(got.weight, SeededMlpParams(seed, s.widths).weight);
    }
}

TYPED_TEST_P(MlpSuite, SingleLayerHasNoReluAndNoDataGradient) {
  for (bool graph : TypeParam::Graphs())
    ExpectStepsMatchReference<TypeParam>(MlpShape({9, 3}, 4, Pass::kTrain, graph), DType::kF32, 2);
}

TYPED_TEST_P(MlpSuite, VerifyPassesAndLeavesTheSeededState) {
  const RunConfig cfg = TypeParam::Config(DType::kF32);
  for (bool graph : TypeParam::Graphs())
    for (Pass pass : {Pass::kTrain, Pass::kInfer}) {
      const TrainShape s = SuiteMlp(TypeParam::kSuiteBatch, pass, graph);
      typename TypeParam::Step op(s, cfg);
      op.Run();  // Verify starts from the seeded state whatever ran before
      const Verdict v = op.Verify();
      EXPECT_TRUE(v.ok) << v.detail;
      EXPECT_EQ(v.disposition, Disposition::kVerified);
      EXPECT_EQ(v.metric, "rel_l2");
      EXPECT_LE(v.error, v.tolerance);
      EXPECT_DOUBLE_EQ(v.tolerance, TypeParam::Tolerance(DType::kF32));
      EXPECT_GT(v.checked, 0u);
      EXPECT_EQ(v.checked, v.of);
      EXPECT_NE(v.detail.find("worst "), std::string::npos) << v.detail;
      EXPECT_EQ(v.detail.find("graph replay") != std::string::npos, graph) << v.detail;
      const MlpParams seeded = SeededMlpParams(cfg.seed, s.widths);
      EXPECT_EQ(op.Snapshot().weight, seeded.weight);
      EXPECT_EQ(op.Snapshot().bias, seeded.bias);
    }
  // After Verify the next Run is a first step again: momentum buffers are back at zero.
  const TrainShape s = TypeParam::PhaseShape();
  typename TypeParam::Step fresh(s, cfg), verified(s, cfg);
  verified.Run();
  ASSERT_TRUE(verified.Verify().ok);
  fresh.Run();
  verified.Run();
  EXPECT_EQ(fresh.Snapshot().weight, verified.Snapshot().weight);
  EXPECT_EQ(fresh.Snapshot().loss, verified.Snapshot().loss);
}

TYPED_TEST_P(MlpSuite, MeasurePhasesFillsCountersAndRestores) {
  const TrainShape s = TypeParam::PhaseShape();
  const RunConfig cfg = TypeParam::Config(DType::kF32);
  typename TypeParam::Step op(s, cfg);
  op.MeasurePhases();
  std::map<std::string, double> c = CounterMap(op.Counters());
  for (const char* k : {"fwd_s", "bwd_s", "opt_s", "peak_mem_bytes"}) {
    ASSERT_EQ(c.count(k), 1u) << k;
    EXPECT_GT(c[k], 0) << k;
  }
  EXPECT_EQ(op.Snapshot().weight, SeededMlpParams(cfg.seed, s.widths).weight);
}

TYPED_TEST_P(MlpSuite, CostAndLabel) {
  const int64_t batch = TypeParam::kSuiteBatch;
  const RunConfig cfg = TypeParam::Config(TypeParam::StepDTypes().back());
  typename TypeParam::Step op(SuiteMlp(batch, Pass::kTrain, TypeParam::Graphs().back()), cfg);
  const double macs = 1000.0 * 512 + 512.0 * 256 + 256.0 * 2;
  EXPECT_EQ(op.cost().flops, 2 * batch * macs * 3);
  EXPECT_EQ(op.cost().items, batch);
  EXPECT_EQ(op.label().rfind(TypeParam::kLabelPrefix, 0), 0u) << op.label();
  TypeParam::CheckLabel(op.label());
  typename TypeParam::Step infer(SuiteMlp(batch, Pass::kInfer), cfg);
  EXPECT_EQ(infer.cost().flops, 2 * batch * macs);
}

REGISTER_TYPED_TEST_SUITE_P(MlpSuite, OneStepMatchesReference, ThreeStepsWithMomentumMatchReference,
                            InferComputesTheLogitsAndLeavesTheWeights,
                            SingleLayerHasNoReluAndNoDataGradient,
                            VerifyPassesAndLeavesTheSeededState,
                            MeasurePhasesFillsCountersAndRestores, CostAndLabel);

}  // namespace dlb::testing

#include "kernels/onednn/mlp.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "kernels/common/train.h"
#include "tests/kernels/mlp_suite.h"
#include "tests/kernels/testing.h"

namespace dlb::onednn {
namespace {

using namespace ::dlb::testing;  // NOLINT: test helpers

// The suite's own MLP at a small batch; f32 only, no graphs.
struct OneDnnMlpOps {
  using Step = NativeMlpStep;
  static constexpr const char* kName = "OneDnn";
  static bool HasDevice() { return true; }
  static RunConfig Config(DType dt) { return MlpConfig(dt, 2); }
  static std::vector<DType> StepDTypes() { return {DType::kF32}; }
  static std::vector<bool> Graphs() { return {false}; }
  static double Tolerance(DType) { return 1e-5; }
  static constexpr int64_t kSuiteBatch = 16;
  static TrainShape InferShape() { return MlpShape({37, 24, 17, 5}, 7, Pass::kInfer); }
  static TrainShape PhaseShape() { return OddMlp(); }
  static constexpr const char* kLabelPrefix = "native mlp 1000-512-256-2: oneDNN matmul ";
  static void CheckLabel(const std::string& label) {
    EXPECT_NE(label.find("threads"), std::string::npos) << label;
  }
};

INSTANTIATE_TYPED_TEST_SUITE_P(OneDnn, MlpSuite, OneDnnMlpOps, OpsName);

RunConfig Config() { return OneDnnMlpOps::Config(DType::kF32); }

// Before MeasurePhases the counters hold the memory only; a forward-only step times no backward.
TEST(OneDnnNativeMlp, PhaseCountersComeFromMeasurePhasesAndFollowThePass) {
  NativeMlpStep op(OddMlp(), Config());
  std::map<std::string, double> before = CounterMap(op.Counters());
  EXPECT_EQ(before.count("fwd_s"), 0u);
  EXPECT_GT(before["peak_mem_bytes"], 0);
  NativeMlpStep infer(MlpShape({37, 24, 17, 5}, 7, Pass::kInfer), Config());
  infer.MeasurePhases();
  const std::map<std::string, double> ic = CounterMap(infer.Counters());
  EXPECT_EQ(ic.count("fwd_s"), 1u);
  EXPECT_EQ(ic.count("bwd_s"), 0u);
}

TEST(OneDnnNativeMlp, SupportsRejectsWhatItCannotRun) {
  const RunConfig cfg = Config();
  const TrainShape suite = SuiteMlp(OneDnnMlpOps::kSuiteBatch);
  EXPECT_TRUE(NativeMlpStep::Supports(suite, cfg).ok);
  ExpectRejectsMalformedMlps<NativeMlpStep>(suite, cfg);
  TrainShape classes = suite;
  classes.classes = 10;
  ExpectBareReason(NativeMlpStep::Supports(classes, cfg));
  for (DType dt : {DType::kTF32, DType::kBF16, DType::kF16}) {
    RunConfig c = cfg;
    c.dtype = dt;
    ExpectBareReason(NativeMlpStep::Supports(suite, c));
    EXPECT_THROW(NativeMlpStep(suite, c), Unsupported);
  }
  EXPECT_THROW(NativeMlpStep(MlpShape({5, 2}, 0), cfg), Unsupported);
}

}  // namespace
}  // namespace dlb::onednn

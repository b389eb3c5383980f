#include "kernels/cublas/mlp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/common/train.h"
#include "kernels/cuda/device.h"
#include "tests/kernels/mlp_suite.h"
#include "tests/kernels/testing.h"

namespace dlb::cublas {
namespace {

using namespace ::dlb::testing;  // NOLINT: test helpers

// f32 and tf32, eager and captured in a CUDA graph, the suite's own MLP at its batch.
struct CublasMlpOps {
  using Step = NativeMlpStep;
  static constexpr const char* kName = "Cublas";
  static bool HasDevice() { return cuda::DeviceCount() > 0; }
  static RunConfig Config(DType dt) { return MlpConfig(dt); }
  static std::vector<DType> StepDTypes() { return {DType::kF32, DType::kTF32}; }
  static std::vector<bool> Graphs() { return {false, true}; }
  static double Tolerance(DType dt) { return dt == DType::kTF32 ? 5e-2 : 1e-5; }
  static constexpr int64_t kSuiteBatch = 64;
  static TrainShape InferShape() { return MlpShape({1000, 512, 256, 2}, 33, Pass::kInfer); }
  static TrainShape PhaseShape() { return SuiteMlp(kSuiteBatch, Pass::kTrain, true); }
  static constexpr const char* kLabelPrefix = "native mlp 1000-512-256-2: cuBLASLt ";
  static void CheckLabel(const std::string& label) {
    EXPECT_NE(label.find("graph"), std::string::npos) << label;
    EXPECT_NE(label.find("32F_FAST_TF32"), std::string::npos) << label;
  }
};

INSTANTIATE_TYPED_TEST_SUITE_P(Cublas, MlpSuite, CublasMlpOps, OpsName);

TEST(CublasNativeMlp, GraphReplaysEqualEagerSteps) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  const RunConfig cfg = CublasMlpOps::Config(DType::kF32);
  NativeMlpStep eager(SuiteMlp(CublasMlpOps::kSuiteBatch), cfg),
      graph(CublasMlpOps::PhaseShape(), cfg);
  for (int i = 0; i < 4; ++i) {
    eager.Run();
    graph.Run();
  }
  const MlpSnapshot e = eager.Snapshot(), g = graph.Snapshot();
  EXPECT_LE(RelL2(g.weight, e.weight), 1e-6);
  EXPECT_LE(RelL2(g.grad_weight, e.grad_weight), 1e-6);
  EXPECT_NEAR(g.loss, e.loss, 1e-6 * std::abs(e.loss));
}

TEST(CublasNativeMlpSupport, RejectsWhatItCannotRun) {
  const RunConfig cfg = CublasMlpOps::Config(DType::kF32);
  const TrainShape suite = SuiteMlp(CublasMlpOps::kSuiteBatch);
  ExpectRejectsMalformedMlps<NativeMlpStep>(suite, cfg);
  for (DType dt : {DType::kBF16, DType::kF16})
    ExpectBareReason(NativeMlpStep::Supports(suite, CublasMlpOps::Config(dt)));
  const Support f32 = NativeMlpStep::Supports(suite, cfg);
  if (cuda::DeviceCount() == 0) {
    ExpectBareReason(f32);
    EXPECT_EQ(f32.why, cuda::NoDeviceReason());
    EXPECT_THROW(NativeMlpStep(suite, cfg), Unsupported);
  } else {
    EXPECT_TRUE(f32.ok) << f32.why;
  }
}

}  // namespace
}  // namespace dlb::cublas

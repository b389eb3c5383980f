// The native GPU MLP step (cuBLASLt and the suite's kernels) equals LibTorch's GPU step, f32 with
// TF32 off, eager and as a graph replay.
#include <gtest/gtest.h>

#include "kernels/cublas/mlp.h"
#include "kernels/cuda/device.h"
#include "tests/kernels/torch/native_parity.h"

namespace dlb::testing {
namespace {

RunConfig Config() {
  RunConfig cfg;
  cfg.dtype = DType::kF32;
  cfg.seed = 11;
  return cfg;
}

TEST(NativeVsTorchGpu, OneStepEqualsLibTorchEagerAndGraph) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  for (bool graph : {false, true})
    for (int64_t b : {16, 256}) {
      TrainShape s = SuiteMlp(b);
      s.graph = graph;
      SCOPED_TRACE(graph ? "graph" : "eager");
      ExpectNativeEqualsTorch<cublas::NativeMlpStep>(s, Config(), libtorch::Where::kGpu);
    }
}

TEST(NativeVsTorchGpu, ForwardEqualsLibTorch) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  ExpectNativeEqualsTorch<cublas::NativeMlpStep>(SuiteMlp(64, Pass::kInfer), Config(),
                                                 libtorch::Where::kGpu);
}

}  // namespace
}  // namespace dlb::testing

// The native CPU MLP step (oneDNN) equals LibTorch's CPU step. This binary links LibTorch and the
// system oneDNN together, which the benchmarks avoid (bench_train_native is its own binary):
// LibTorch 2.x carries a oneDNN of its own, so the first test checks that the native step's
// oneDNN calls reach the library its headers describe.
#include "tests/kernels/torch/native_parity.h"

#include <dnnl.h>
#include <gtest/gtest.h>

#include "kernels/onednn/mlp.h"

namespace dlb::testing {
namespace {

RunConfig Config() {
  RunConfig cfg;
  cfg.threads = 2;
  cfg.seed = 11;
  return cfg;
}

TEST(NativeVsTorchCpu, NativeStepCallsTheOneDnnItWasBuiltAgainst) {
  const dnnl_version_t* v = dnnl_version();
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->major, DNNL_VERSION_MAJOR);
  EXPECT_EQ(v->minor, DNNL_VERSION_MINOR);
  EXPECT_EQ(v->patch, DNNL_VERSION_PATCH);
}

TEST(NativeVsTorchCpu, OneStepEqualsLibTorch) {
  for (int64_t b : {16, 64})
    ExpectNativeEqualsTorch<onednn::NativeMlpStep>(SuiteMlp(b), Config(), libtorch::Where::kCpu);
}

TEST(NativeVsTorchCpu, ForwardEqualsLibTorch) {
  ExpectNativeEqualsTorch<onednn::NativeMlpStep>(SuiteMlp(16, Pass::kInfer), Config(),
                                                 libtorch::Where::kCpu);
}

}  // namespace
}  // namespace dlb::testing

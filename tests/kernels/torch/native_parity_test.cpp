// The native CPU MLP step (oneDNN) equals LibTorch's CPU step. This binary links LibTorch and the
// system oneDNN together, which the benchmarks avoid (bench_train_native is its own binary):
// LibTorch 2.x carries a oneDNN of its own whose symbols then take the native step's calls (on the
// GPU host torch 2.11's 3.10 answered dnnl_version() for headers of 3.7). The comparison runs only
// where the native step reaches the library its headers describe (Debian's LibTorch is built on
// the system oneDNN), and says why it is skipped elsewhere.
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

class NativeVsTorchCpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const dnnl_version_t* v = dnnl_version();
    ASSERT_NE(v, nullptr);
    if (v->major != DNNL_VERSION_MAJOR || v->minor != DNNL_VERSION_MINOR ||
        v->patch != DNNL_VERSION_PATCH)
      GTEST_SKIP() << "LibTorch's own oneDNN " << v->major << "." << v->minor << "." << v->patch
                   << " answers the native step's calls in this process (headers "
                   << DNNL_VERSION_MAJOR << "." << DNNL_VERSION_MINOR << "." << DNNL_VERSION_PATCH
                   << "): not comparable here; bench_train_native keeps them apart";
  }
};

TEST_F(NativeVsTorchCpu, OneStepEqualsLibTorch) {
  for (int64_t b : {16, 64})
    ExpectNativeEqualsTorch<onednn::NativeMlpStep>(SuiteMlp(b), Config(), libtorch::Where::kCpu);
}

TEST_F(NativeVsTorchCpu, ForwardEqualsLibTorch) {
  ExpectNativeEqualsTorch<onednn::NativeMlpStep>(SuiteMlp(16, Pass::kInfer), Config(),
                                                 libtorch::Where::kCpu);
}

}  // namespace
}  // namespace dlb::testing

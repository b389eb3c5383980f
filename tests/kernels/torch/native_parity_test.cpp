// The native CPU MLP step (oneDNN) equals LibTorch's CPU step. This binary links LibTorch and the
// system oneDNN together, which the benchmarks avoid (bench_train_native is its own binary):
// LibTorch 2.x carries a oneDNN of its own, headers included (with torch 2.11 the native step here
// compiled against its 3.10 headers and ran on the system's 3.7). The comparison runs only
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
      GTEST_SKIP()
          << "the native step was compiled against oneDNN " << DNNL_VERSION_MAJOR << "."
          << DNNL_VERSION_MINOR << "." << DNNL_VERSION_PATCH
          << " headers, and dnnl_version() answers " << v->major << "." << v->minor << "."
          << v->patch
          << " in this process: LibTorch's own oneDNN is linked in too, so the two are not "
             "comparable here (bench_train_native keeps them apart)";
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

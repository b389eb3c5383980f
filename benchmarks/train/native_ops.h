// bench_train_native's op list: the suite's own MLP step, on oneDNN (CPU) and cuBLASLt (GPU),
// where this build has them. Its own binary: LibTorch 2.x brings a oneDNN of its own, and the
// native CPU step must call the system's.
#pragma once

#include "fixtures/harness.h"

#ifdef DLBENCH_HAVE_ONEDNN
#include "kernels/onednn/mlp.h"
#endif
#ifdef DLBENCH_HAVE_CUDA
#include "kernels/cublas/mlp.h"
#endif

namespace dlb::train {

#ifdef DLBENCH_HAVE_ONEDNN
using NativeCpuOps = OpList<onednn::NativeMlpStep>;
#else
using NativeCpuOps = OpList<>;
#endif
#ifdef DLBENCH_HAVE_CUDA
using NativeGpuOps = OpList<cublas::NativeMlpStep>;
#else
using NativeGpuOps = OpList<>;
#endif
using NativeOps = decltype(NativeCpuOps{} + NativeGpuOps{});

}  // namespace dlb::train

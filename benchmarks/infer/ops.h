// The inference steps this build has: oneDNN's, and the GPU's (cuBLASLt and CUDA kernels) when
// CUDA is built. The one place the family names its backends' build options; registration only
// visits the lists.
#pragma once

#include "fixtures/harness.h"

#ifdef DLBENCH_HAVE_ONEDNN
#include "kernels/onednn/infer.h"
#endif
#ifdef DLBENCH_HAVE_CUDA
#include "kernels/cublas/infer.h"
#endif

namespace dlb::infer {

#ifdef DLBENCH_HAVE_ONEDNN
using CpuOps = OpList<onednn::OneDnnInfer>;
#else
using CpuOps = OpList<>;
#endif

#ifdef DLBENCH_HAVE_CUDA
using GpuOps = OpList<cublas::NativeInfer, cublas::NativePagedInfer>;
#else
using GpuOps = OpList<>;
#endif

using Ops = decltype(CpuOps{} + GpuOps{});

}  // namespace dlb::infer

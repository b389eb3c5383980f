// The convolution ops this build has: oneDNN's when it is built, cuDNN's when CUDA is. The one
// place the family names its backends' build options; registration only visits the lists.
#pragma once

#include "fixtures/harness.h"

#ifdef DLBENCH_HAVE_ONEDNN
#include "kernels/onednn/conv.h"
#endif
#ifdef DLBENCH_HAVE_CUDA
#include "kernels/cudnn/conv.h"
#endif

namespace dlb::conv {

#ifdef DLBENCH_HAVE_ONEDNN
using CpuOps = OpList<OneDnnConvFwd, OneDnnConvBwdData, OneDnnConvBwdWeights>;
#else
using CpuOps = OpList<>;
#endif

#ifdef DLBENCH_HAVE_CUDA
using GpuOps = OpList<CudnnConvFwd, CudnnConvBwdData, CudnnConvBwdFilter>;
#else
using GpuOps = OpList<>;
#endif

using Ops = decltype(CpuOps{} + GpuOps{});

}  // namespace dlb::conv

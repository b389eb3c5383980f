// The attention ops this build has: oneDNN's when it is built, cuDNN's fused SDPA when CUDA is.
// The one place the family names its backends' build options; registration only visits the lists.
#pragma once

#include "fixtures/harness.h"

#ifdef DLBENCH_HAVE_ONEDNN
#include "kernels/onednn/attn.h"
#endif
#ifdef DLBENCH_HAVE_CUDA
#include "kernels/cudnn/attn.h"
#endif

namespace dlb::attn {

#ifdef DLBENCH_HAVE_ONEDNN
using CpuOps = OpList<onednn::OneDnnAttn>;
#else
using CpuOps = OpList<>;
#endif

#ifdef DLBENCH_HAVE_CUDA
using GpuOps = OpList<cudnn::CudnnAttn>;
#else
using GpuOps = OpList<>;
#endif

using Ops = decltype(CpuOps{} + GpuOps{});

}  // namespace dlb::attn

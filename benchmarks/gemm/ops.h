// The GEMM ops this build has: oneDNN's matmul when it is built, cuBLAS and cuBLASLt when CUDA is.
// The one place the family names its backends' build options; registration only visits the lists.
#pragma once

#include "fixtures/harness.h"

#ifdef DLBENCH_HAVE_ONEDNN
#include "kernels/onednn/matmul.h"
#endif
#ifdef DLBENCH_HAVE_CUDA
#include "kernels/cublas/gemm.h"
#endif

namespace dlb::gemm {

#ifdef DLBENCH_HAVE_ONEDNN
using CpuOps = OpList<onednn::OneDnnMatmul>;
#else
using CpuOps = OpList<>;
#endif

#ifdef DLBENCH_HAVE_CUDA
using GpuOps = OpList<cublas::CublasGemm, cublas::CublasLtGemm>;
#else
using GpuOps = OpList<>;
#endif

using Ops = decltype(CpuOps{} + GpuOps{});

}  // namespace dlb::gemm

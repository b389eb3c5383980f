// The inference steps this build has: oneDNN's, the GPU's (cuBLASLt and CUDA kernels) when CUDA
// is built, and LibTorch's own step (kernels/torch/infer.h) on the CPU, and on the GPU where
// LibTorch has CUDA. The one place the family names its backends' build options (with the large
// models' f32 check, benchmarks/infer/f32_check.cpp); registration only visits the lists.
#pragma once

#include "fixtures/harness.h"

#ifdef DLBENCH_HAVE_ONEDNN
#include "kernels/onednn/infer.h"
#endif
#ifdef DLBENCH_HAVE_CUDA
#include "kernels/cublas/infer.h"
#endif
#ifdef DLBENCH_HAVE_TORCH_INFER
#include <benchmark/benchmark.h>

#include <string>

#include "kernels/backends.h"
#include "kernels/torch/infer.h"
#include "kernels/torch/step.h"
#endif

namespace dlb::infer {

#ifdef DLBENCH_HAVE_ONEDNN
using OneDnnOps = OpList<onednn::OneDnnInfer>;
#else
using OneDnnOps = OpList<>;
#endif

#ifdef DLBENCH_HAVE_CUDA
using NativeGpuOps = OpList<cublas::NativeInfer, cublas::NativePagedInfer>;
#else
using NativeGpuOps = OpList<>;
#endif

#ifdef DLBENCH_HAVE_TORCH_INFER
using TorchCpuOps = OpList<libtorch::TorchInferCpu>;
#else
using TorchCpuOps = OpList<>;
#endif

#ifdef DLBENCH_HAVE_TORCH_CUDA
using TorchGpuOps = OpList<libtorch::TorchInferGpu>;
#else
using TorchGpuOps = OpList<>;
#endif

using Ops = decltype(OneDnnOps{} + NativeGpuOps{} + TorchCpuOps{} + TorchGpuOps{});

// LibTorch's version and CUDA in the context, and its threads: the count oneDNN was given before
// any case, not LibTorch's own default (as the training family sets them).
inline void SetUpLibTorch() {
#ifdef DLBENCH_HAVE_TORCH_INFER
  benchmark::AddCustomContext(std::string(schema::kCtxTorchVersion), libtorch::TorchVersion());
  benchmark::AddCustomContext(std::string(schema::kCtxTorchCuda),
                              libtorch::TorchHasCuda() ? "yes" : "no");
  libtorch::SetTorchThreads(backends::CpuThreads());
  benchmark::AddCustomContext(std::string(schema::kCtxTorchThreads),
                              std::to_string(libtorch::TorchThreads()));
#endif
}

}  // namespace dlb::infer

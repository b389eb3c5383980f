// bench_train's op list: the LibTorch steps this build has (the GPU step where LibTorch has CUDA),
// and LibTorch's run settings every case shares (its threads, its context keys). Included by
// bench_train alone: bench_train_native's list is native_ops.h.
#pragma once

#include <benchmark/benchmark.h>

#include <string>

#include "fixtures/harness.h"
#include "kernels/backends.h"
#include "kernels/torch/step.h"

namespace dlb::train {

#ifdef DLBENCH_HAVE_TORCH_CUDA
using Ops = OpList<libtorch::TorchStepCpu, libtorch::TorchStepGpu>;
#else
using Ops = OpList<libtorch::TorchStepCpu>;
#endif

// LibTorch's version and CUDA in the context, and its threads: the count oneDNN was given before
// any case (fixtures/run/main.cpp), the same cores for both, and not LibTorch's own default, which
// cpuinfo can make fewer.
inline void SetUpLibTorch() {
  benchmark::AddCustomContext(std::string(schema::kCtxTorchVersion), libtorch::TorchVersion());
  benchmark::AddCustomContext(std::string(schema::kCtxTorchCuda),
                              libtorch::TorchHasCuda() ? "yes" : "no");
  libtorch::SetTorchThreads(backends::CpuThreads());
  benchmark::AddCustomContext(std::string(schema::kCtxTorchThreads),
                              std::to_string(libtorch::TorchThreads()));
}

}  // namespace dlb::train

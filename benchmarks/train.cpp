// Training-step family on LibTorch: every model of fixtures/workloads/train_models.csv x the
// tier's batch sizes x configurations, on the CPU (LibTorch's CPU path) and the GPU (cuDNN and
// cuBLAS through LibTorch, eager or the whole step in a CUDA graph).
#include <benchmark/benchmark.h>

#include "benchmarks/train/family.h"
#include "fixtures/main.h"
#include "fixtures/op_list.h"
#include "kernels/torch/step.h"

namespace dlb::train {
namespace {

#ifdef DLBENCH_HAVE_TORCH_CUDA
using Ops = OpList<libtorch::TorchStepCpu, libtorch::TorchStepGpu>;
#else
using Ops = OpList<libtorch::TorchStepCpu>;
#endif

void RegisterCases() {
  benchmark::AddCustomContext(std::string(schema::kCtxTorchVersion), libtorch::TorchVersion());
  benchmark::AddCustomContext(std::string(schema::kCtxTorchCuda),
                              libtorch::TorchHasCuda() ? "yes" : "no");
  libtorch::SetTorchThreads(dlb::Opts().threads);
  benchmark::AddCustomContext(std::string(schema::kCtxTorchThreads),
                              std::to_string(libtorch::TorchThreads()));
  for (const Model& m : TierModels())
    for (int b : Batches(m))
      ForEachOp(Ops{}, [&](auto tag) {
        using Op = typename decltype(tag)::type;
        if (!WantDevice(Op::kGpu)) return;
        for (const Config& c : Configs(Op::kGpu)) {
          if (m.shape.image == 0 && c.layout != Layout::kNCHW) continue;  // the MLP has no layout
          Add<Op>(m, b, c);
        }
      });
}

}  // namespace
}  // namespace dlb::train

DLB_BENCH_MAIN((dlb::Family{"train", {}, dlb::train::RegisterCases}))

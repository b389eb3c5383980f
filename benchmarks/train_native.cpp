// The training family's native MLP step: the suite's own ops (oneDNN matmul and eltwise with an
// SGD update on the CPU; cuBLASLt with bias/ReLU epilogues and small CUDA kernels on the GPU),
// named like LibTorch's MLP cases (backend "native") so the report sets them side by side. Its
// own binary: LibTorch 2.x brings a oneDNN of its own, and the native CPU step must call the
// system's.
#include "benchmarks/train/family.h"
#include "fixtures/case/op_list.h"
#include "fixtures/harness.h"

#ifdef DLBENCH_HAVE_ONEDNN
#include "kernels/onednn/mlp.h"
#endif
#ifdef DLBENCH_HAVE_CUDA
#include "kernels/cublas/mlp.h"
#endif

namespace dlb::train {
namespace {

#ifdef DLBENCH_HAVE_ONEDNN
using CpuOps = OpList<onednn::NativeMlpStep>;
#else
using CpuOps = OpList<>;
#endif
#ifdef DLBENCH_HAVE_CUDA
using GpuOps = OpList<cublas::NativeMlpStep>;
#else
using GpuOps = OpList<>;
#endif
using Ops = decltype(CpuOps{} + GpuOps{});

void RegisterCases() {
  for (const Model& m : TierModels()) {
    if (m.shape.model != "mlp") continue;
    for (int b : AnyDeviceBatches(m))
      ForEachOp(Ops{}, [&](auto tag) {
        using Op = typename decltype(tag)::type;
        if (!WantDevice(Op::kGpu) || !Contains(Batches(m, Op::kGpu), b)) return;
        for (const Config& c : Configs(Op::kGpu)) {
          // The native step is f32 (and TF32 on the GPU); its layout is the MLP's only one.
          if (c.amp || c.layout != Layout::kNCHW) continue;
          Add<Op>(m, b, c);
        }
      });
  }
}

}  // namespace
}  // namespace dlb::train

DLB_BENCH_MAIN((dlb::Family{"train", {}, dlb::train::RegisterCases}))

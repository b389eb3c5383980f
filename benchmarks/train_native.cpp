// The training family's native MLP step: the suite's own ops (oneDNN matmul and eltwise with an
// SGD update on the CPU; cuBLASLt with bias/ReLU epilogues and small CUDA kernels on the GPU),
// named like LibTorch's MLP cases (backend "native") so the report sets them side by side. Its
// own binary: LibTorch 2.x brings a oneDNN of its own, and the native CPU step must call the
// system's.
#include "benchmarks/train/family.h"
#include "benchmarks/train/native_ops.h"
#include "fixtures/harness.h"

namespace dlb::train {
namespace {

void RegisterCases() {
  for (const Model& m : TierModels()) {
    if (m.shape.model != "mlp") continue;
    for (int b : AnyDeviceBatches(m))
      ForEachOp(NativeOps{}, [&](auto tag) {
        using Op = typename decltype(tag)::type;
        if (!Contains(Batches(m, Op::kGpu), b)) return;
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

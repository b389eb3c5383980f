// Training-step family on LibTorch: every model of fixtures/workloads/train_models.csv x the
// tier's batch sizes x configurations, on the CPU (LibTorch's CPU path) and the GPU (cuDNN and
// cuBLAS through LibTorch, eager or the whole step in a CUDA graph); the transformers of
// fixtures/workloads/train_transformers.csv at the tier's batches and sequence lengths; the GPU
// step fed by an input pipeline; and the data-parallel step on n GPUs, one process per GPU under
// mpirun, srun or torchrun (benchmarks/train/matrix.h says what each tier times).
#include "benchmarks/train/ddp.h"
#include "benchmarks/train/family.h"
#include "benchmarks/train/loader_fed.h"
#include "benchmarks/train/ops.h"
#include "fixtures/harness.h"

namespace dlb::train {
namespace {

void RegisterCases() {
  SetUpLibTorch();
  // Under a launcher of several processes each rank would time its own copy of the other cases.
  if (MultiProcess()) return RegisterDdpCases();
  for (const Model& m : TierModels()) {
    if (m.shape.seq > 0) {
      ForEachOp(Ops{}, [&](auto tag) {
        using Op = typename decltype(tag)::type;
        for (const TransformerCase& tc : TransformerCases(m, Op::kGpu)) AddTransformer<Op>(m, tc);
      });
      continue;
    }
    for (int b : AnyDeviceBatches(m))
      ForEachOp(Ops{}, [&](auto tag) {
        using Op = typename decltype(tag)::type;
        if (!Contains(Batches(m, Op::kGpu), b)) return;
        for (const Config& c : Configs(Op::kGpu)) {
          if (m.shape.image == 0 && c.layout != Layout::kNCHW) continue;  // the MLP has no layout
          Add<Op>(m, b, c);
        }
      });
  }
  RegisterLoaderFedCases();
  RegisterDdpCases();
}

}  // namespace
}  // namespace dlb::train

DLB_LAUNCHED_MAIN((dlb::Family{"train", dlb::train::Flags(), dlb::train::RegisterCases}),
                  dlb::train::DdpLaunch())

// Inference family: one prefill or decode step of every model of fixtures/workloads/
// infer_models.csv x batch sizes x contexts x dtypes, on oneDNN (CPU), cuBLASLt with CUDA kernels
// (GPU), and LibTorch's own step (both).
#include "benchmarks/infer/family.h"
#include "benchmarks/infer/ops.h"
#include "fixtures/harness.h"

namespace dlb::infer {
namespace {

void RegisterCases() {
  SetUpLibTorch();
  for (const Model& m : TierModels())
    ForEachOp(Ops{}, [&](auto tag) {
      using Op = typename decltype(tag)::type;
      if (!WantDevice(Op::kGpu)) return;
      for (DType dt : DTypesOn(Op::kGpu, Op::kBackend))
        for (const Point& p : Points(Op::kGpu, m.config, dt)) Add<Op>(m, p, dt);
    });
}

}  // namespace
}  // namespace dlb::infer

DLB_BENCH_MAIN((dlb::Family{"infer", {}, dlb::infer::RegisterCases}))

// Inference family: one prefill or decode step of every model of fixtures/workloads/
// infer_models.csv x batch sizes x contexts x dtypes, on oneDNN (CPU), cuBLASLt with CUDA kernels
// (GPU; its decode also over a paged KV cache), and LibTorch's own step (both).
#include "benchmarks/infer/family.h"
#include "benchmarks/infer/matrix.h"
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
      constexpr bool paged = PagedKv<Op>::value;
      if (paged && !matrix::kGpuPagedDecode.Now()) return;
      for (DType dt : DTypesOn(Op::kGpu, Op::kBackend))
        for (const Point& p : Points(Op::kGpu, m.config, dt))
          if (!paged || p.phase == InferPhase::kDecode) Add<Op>(m, p, dt);
    });
}

}  // namespace
}  // namespace dlb::infer

DLB_BENCH_MAIN((dlb::Family{"infer", {}, dlb::infer::RegisterCases}))

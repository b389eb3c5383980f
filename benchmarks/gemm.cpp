// GEMM family: every row of fixtures/workloads/gemm_*.csv x dtypes (x batch sizes for the fully
// connected layers, whose M is the batch), on oneDNN (CPU), cuBLAS and cuBLASLt (GPU).
#include "benchmarks/gemm/family.h"
#include "benchmarks/gemm/ops.h"
#include "fixtures/main.h"

namespace dlb::gemm {
namespace {

// f32 and bf16 on the CPU; on the GPU also tf32 and f16, except in the smoke tier.
std::vector<DType> DTypesOn(bool gpu) {
  if (gpu && dlb::Opts().tier != Tier::kSmoke)
    return DTypes({DType::kF32, DType::kTF32, DType::kF16, DType::kBF16});
  return DTypes({DType::kF32, DType::kBF16});
}

void RegisterCases() {
  const std::vector<int> batches =
      BatchSizes({2}, {16, 64, 256}, {1, 2, 4, 8, 16, 32, 64, 128, 256, 512});
  for (const Workload& w : TierWorkloads())
    for (int b : w.m_is_batch ? batches : std::vector<int>{0})
      ForEachOp(Ops{}, [&](auto tag) {
        using Op = typename decltype(tag)::type;
        if (!WantDevice(Op::kGpu)) return;
        for (DType dt : DTypesOn(Op::kGpu)) Add<Op>(w, b, dt);
      });
}

}  // namespace
}  // namespace dlb::gemm

DLB_BENCH_MAIN((dlb::Family{"gemm", dlb::gemm::Flags(), dlb::gemm::RegisterCases}))

// GEMM family: every row of fixtures/workloads/gemm_*.csv x dtypes (x batch sizes for the fully
// connected layers, whose M is the batch), on oneDNN (CPU), cuBLAS and cuBLASLt (GPU).
#include <string>
#include <vector>

#include "benchmarks/gemm/family.h"
#include "benchmarks/gemm/ops.h"
#include "fixtures/harness.h"

namespace dlb::gemm {
namespace {

// f32 and bf16 on the CPU; on the GPU also tf32 and f16, except in the smoke tier. The 8-bit
// types, beyond the smoke tier: int8 on every backend, fp8 on cuBLASLt (the one with FP8 scales),
// on the square rows in the default tier, on every row (and fp8_e5m2 too) in the full tier.
std::vector<DType> DTypesOn(bool gpu, const char* backend, const Workload& w) {
  const Tier tier = dlb::Opts().tier;
  if (tier == Tier::kSmoke) return DTypes({DType::kF32, DType::kBF16});
  std::vector<DType> dts = {DType::kF32, DType::kBF16};
  if (gpu) dts = {DType::kF32, DType::kTF32, DType::kF16, DType::kBF16};
  const bool square = w.basics.name.rfind("square.", 0) == 0;
  if (tier == Tier::kFull || square) {
    if (std::string(backend) == "cublaslt") {
      dts.push_back(DType::kFP8E4M3);
      if (tier == Tier::kFull) dts.push_back(DType::kFP8E5M2);
    }
    dts.push_back(DType::kInt8);
  }
  return DTypes(dts);
}

void RegisterCases() {
  const std::vector<int> batches =
      BatchSizes({2}, {16, 64, 256}, {1, 2, 4, 8, 16, 32, 64, 128, 256, 512});
  for (const Workload& w : TierWorkloads())
    for (int b : w.m_is_batch ? batches : std::vector<int>{0})
      ForEachOp(Ops{}, [&](auto tag) {
        using Op = typename decltype(tag)::type;
        if (!WantDevice(Op::kGpu)) return;
        for (DType dt : DTypesOn(Op::kGpu, Op::kBackend, w)) Add<Op>(w, b, dt);
      });
}

}  // namespace
}  // namespace dlb::gemm

DLB_BENCH_MAIN((dlb::Family{"gemm", dlb::gemm::Flags(), dlb::gemm::RegisterCases}))

// GEMM family: every row of fixtures/workloads/gemm_*.csv x dtypes (x batch sizes for the fully
// connected layers, whose M is the batch), on oneDNN (CPU), cuBLAS and cuBLASLt (GPU); the tier
// matrix in benchmarks/gemm/matrix.h.
#include <string>
#include <vector>

#include "benchmarks/gemm/family.h"
#include "benchmarks/gemm/matrix.h"
#include "benchmarks/gemm/ops.h"
#include "fixtures/harness.h"

namespace dlb::gemm {
namespace {

std::vector<DType> DTypesOn(bool gpu, const std::string& backend, const Workload& w) {
  std::vector<DType> dts = (gpu ? matrix::kGpuDTypes : matrix::kCpuDTypes).Now();
  if (matrix::kEightBitOnEveryRow.Now() || IsSquare(w)) {
    if (backend == "cublaslt")
      for (DType dt : matrix::kFp8DTypes.Now()) dts.push_back(dt);
    for (DType dt : matrix::kInt8DTypes.Now()) dts.push_back(dt);
  }
  return DTypes(dts);
}

void RegisterCases() {
  const std::vector<int> batches = BatchSizes(matrix::kFcBatches);
  for (const Workload& w : TierWorkloads())
    for (int b : w.m_is_batch ? batches : std::vector<int>{0})
      ForEachOp(Ops{}, [&](auto tag) {
        using Op = typename decltype(tag)::type;
        for (DType dt : DTypesOn(Op::kGpu, Op::kBackend, w)) Add<Op>(w, b, dt);
      });
}

}  // namespace
}  // namespace dlb::gemm

DLB_BENCH_MAIN((dlb::Family{"gemm", dlb::gemm::Flags(), dlb::gemm::RegisterCases}))

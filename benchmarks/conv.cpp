// Convolution family: every layer of fixtures/workloads/conv_*.csv (one file per network, each row
// with its repeat count) x passes x dtypes x layouts x batch sizes, on oneDNN (CPU) and cuDNN
// (GPU); the tier matrix in benchmarks/conv/matrix.h.
#include <algorithm>
#include <vector>

#include "benchmarks/conv/family.h"
#include "benchmarks/conv/matrix.h"
#include "benchmarks/conv/ops.h"
#include "fixtures/harness.h"

namespace dlb::conv {
namespace {

std::vector<int> BatchesOn(bool gpu) {
  return BatchSizes(gpu ? matrix::kGpuBatches : matrix::kCpuBatches);
}

std::vector<DType> DTypesOn(bool gpu) {
  return DTypes(gpu ? matrix::kGpuDTypes : matrix::kCpuDTypes);
}

std::vector<Layout> LayoutsOn(bool gpu, DType dt) {
  if (gpu && matrix::kGpuEveryLayout.Now()) return {Layout::kNCHW, Layout::kNHWC};
  return {NaturalLayout(dt)};
}

void RegisterCases() {
  std::vector<int> batches = BatchesOn(true);
  for (int b : BatchesOn(false))
    if (std::find(batches.begin(), batches.end(), b) == batches.end()) batches.push_back(b);
  for (const Workload& w : TierWorkloads())
    for (int b : batches)
      for (ConvPass pass : {ConvPass::kFwd, ConvPass::kBwdData, ConvPass::kBwdFilter})
        ForEachOp(Ops{}, [&](auto tag) {
          using Op = typename decltype(tag)::type;
          if (PassOf<Op>::value != pass) return;
          const std::vector<int> mine = BatchesOn(Op::kGpu);
          if (std::find(mine.begin(), mine.end(), b) == mine.end()) return;
          for (DType dt : DTypesOn(Op::kGpu))
            for (Layout layout : LayoutsOn(Op::kGpu, dt)) Add<Op>(w, b, dt, layout);
        });
}

}  // namespace
}  // namespace dlb::conv

DLB_BENCH_MAIN((dlb::Family{"conv", dlb::conv::Flags(), dlb::conv::RegisterCases}))

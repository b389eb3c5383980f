// Convolution family: every layer of fixtures/workloads/conv_*.csv (one file per network, each row
// with its repeat count) x passes x dtypes x layouts x batch sizes, on oneDNN (CPU) and cuDNN
// (GPU).
#include <algorithm>
#include <vector>

#include "benchmarks/conv/family.h"
#include "benchmarks/conv/ops.h"
#include "fixtures/harness.h"

namespace dlb::conv {
namespace {

// f32 (NCHW) and bf16 (NHWC) on both devices; tf32 and f16 too on the GPU in the full tier.
std::vector<DType> DTypesOn(bool gpu) {
  if (gpu && dlb::Opts().tier == Tier::kFull)
    return DTypes({DType::kF32, DType::kTF32, DType::kF16, DType::kBF16});
  return DTypes({DType::kF32, DType::kBF16});
}

// The layout a framework uses for the dtype; the full tier times both on the GPU.
std::vector<Layout> LayoutsOn(bool gpu, DType dt) {
  if (gpu && dlb::Opts().tier == Tier::kFull) return {Layout::kNCHW, Layout::kNHWC};
  return {NaturalLayout(dt)};
}

// The batch sizes of the tier on a device: the default's on the CPU are those a CPU trains with
// (16, 32, 64); the GPU's go to 256.
std::vector<int> BatchesOn(bool gpu) {
  return BatchSizes({1, 2},
                    gpu ? std::vector<int>{16, 32, 64, 128, 256} : std::vector<int>{16, 32, 64},
                    {1, 2, 4, 8, 16, 32, 64, 128, 256, 512});
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
          if (PassOf<Op>::value != pass || !WantDevice(Op::kGpu)) return;
          const std::vector<int> mine = BatchesOn(Op::kGpu);
          if (std::find(mine.begin(), mine.end(), b) == mine.end()) return;
          for (DType dt : DTypesOn(Op::kGpu))
            for (Layout layout : LayoutsOn(Op::kGpu, dt)) Add<Op>(w, b, dt, layout);
        });
}

}  // namespace
}  // namespace dlb::conv

DLB_BENCH_MAIN((dlb::Family{"conv", dlb::conv::Flags(), dlb::conv::RegisterCases}))

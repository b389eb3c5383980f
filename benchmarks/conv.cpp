// Convolution family: every layer of fixtures/workloads/conv_*.csv (one file per network, each row
// with its repeat count) x passes x dtypes x layouts x batch sizes, on oneDNN (CPU) and cuDNN
// (GPU).
#include "benchmarks/conv/family.h"
#include "benchmarks/conv/ops.h"
#include "fixtures/main.h"

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

void RegisterCases() {
  const auto batches =
      BatchSizes({1, 2}, {16, 32, 64, 128, 256}, {1, 2, 4, 8, 16, 32, 64, 128, 256, 512});
  for (const Workload& w : TierWorkloads())
    for (int b : batches)
      for (ConvPass pass : {ConvPass::kFwd, ConvPass::kBwdData, ConvPass::kBwdFilter})
        ForEachOp(Ops{}, [&](auto tag) {
          using Op = typename decltype(tag)::type;
          if (PassOf<Op>::value != pass || !WantDevice(Op::kGpu)) return;
          for (DType dt : DTypesOn(Op::kGpu))
            for (Layout layout : LayoutsOn(Op::kGpu, dt)) Add<Op>(w, b, dt, layout);
        });
}

}  // namespace
}  // namespace dlb::conv

DLB_BENCH_MAIN((dlb::Family{"conv", dlb::conv::Flags(), dlb::conv::RegisterCases}))

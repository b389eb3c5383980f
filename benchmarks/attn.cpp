// Attention family: scaled-dot-product attention of every model of fixtures/workloads/
// attn_models.csv x sequence lengths (a fixed token count per batch) x passes x dtypes, on oneDNN
// (CPU) and cuDNN's fused SDPA (GPU).
#include "benchmarks/attn/family.h"
#include "benchmarks/attn/ops.h"
#include "fixtures/harness.h"

namespace dlb::attn {
namespace {

void RegisterCases() {
  for (const Model& m : TierModels())
    ForEachOp(Ops{}, [&](auto tag) {
      using Op = typename decltype(tag)::type;
      for (const Point& p : Points(Op::kGpu))
        for (AttnPass pass : {AttnPass::kFwd, AttnPass::kBwd})
          for (DType dt : DTypesOn(Op::kGpu)) Add<Op>(m, p, dt, pass);
    });
}

}  // namespace
}  // namespace dlb::attn

DLB_BENCH_MAIN((dlb::Family{"attn", dlb::attn::Flags(), dlb::attn::RegisterCases}))

// Convolution family: fixtures/workloads/conv_*.csv (one row per distinct layer, with its repeat
// count) x {oneDNN (CPU), cuDNN (GPU)} x passes x dtypes x layouts x batch sizes.
#include "fixtures/checks.h"
#include "fixtures/harness.h"
#include "fixtures/main.h"
#include "fixtures/workloads.h"

#ifdef DLBENCH_HAVE_ONEDNN
#include "kernels/onednn/conv.h"
#endif
#ifdef DLBENCH_HAVE_CUDA
#include "kernels/cudnn/conv.h"
#endif

namespace dlb {
namespace {

// Default tier: f32 (NCHW) and bf16 (NHWC) on both devices, tf32 and f16 too in the full tier
// (or with --dlb_dtypes). The layout a framework would use for the dtype: NCHW for 32-bit, NHWC
// (channels-last) for 16-bit; the full tier times both on the GPU.
Layout NaturalLayout(DType dt) {
  return dt == DType::kF16 || dt == DType::kBF16 ? Layout::kNHWC : Layout::kNCHW;
}

template <class Op>
void Add(const char* device, const char* backend, const ConvWorkload& w, int batch, DType dt,
         Layout layout, ConvPass pass) {
  ConvShape shape = w.shape;
  shape.n = batch;
  RunConfig cfg;
  cfg.dtype = dt;
  cfg.layout = layout;
  cfg.seed = Opts().seed;
  cfg.threads = Opts().threads;
  cfg.algo = Opts().conv_algo;
  BenchName name{"conv",
                 device,
                 backend,
                 w.name,
                 {{"bs", std::to_string(batch)},
                  {"dt", std::string(Name(dt))},
                  {"fmt", Name(layout)},
                  {"pass", Name(pass)}}};
  Register<Op>(name, shape, cfg, {"", dt, w.count, batch, ConvVerifier(shape, cfg, pass)});
}

void RegisterConv() {
  const auto batches =
      BatchSizes({1, 2}, {16, 32, 64, 128, 256}, {1, 2, 4, 8, 16, 32, 64, 128, 256, 512});
  const bool full = Opts().tier == Tier::kFull;
  const auto cpu_dtypes = DTypes({DType::kF32, DType::kBF16});
  const auto gpu_dtypes =
      DTypes(Opts().tier == Tier::kSmoke ? std::vector<DType>{DType::kF32, DType::kBF16}
             : full ? std::vector<DType>{DType::kF32, DType::kTF32, DType::kF16, DType::kBF16}
                    : std::vector<DType>{DType::kF32, DType::kBF16});
  const ConvPass passes[] = {ConvPass::kFwd, ConvPass::kBwdData, ConvPass::kBwdFilter};
  for (const std::string& file : WorkloadFiles("conv_")) {
    for (const ConvWorkload& w : LoadConvWorkloads(file)) {
      if (w.tier > Opts().tier) continue;
      for (int b : batches) {
        for (ConvPass pass : passes) {
#ifdef DLBENCH_HAVE_ONEDNN
          if (WantDevice(false)) {
            for (DType dt : cpu_dtypes) {
              Layout l = NaturalLayout(dt);
              if (pass == ConvPass::kFwd) Add<OneDnnConvFwd>("cpu", "onednn", w, b, dt, l, pass);
              if (pass == ConvPass::kBwdData)
                Add<OneDnnConvBwdData>("cpu", "onednn", w, b, dt, l, pass);
              if (pass == ConvPass::kBwdFilter)
                Add<OneDnnConvBwdWeights>("cpu", "onednn", w, b, dt, l, pass);
            }
          }
#endif
#ifdef DLBENCH_HAVE_CUDA
          if (WantDevice(true)) {
            for (DType dt : gpu_dtypes) {
              std::vector<Layout> layouts = {NaturalLayout(dt)};
              if (full) layouts = {Layout::kNCHW, Layout::kNHWC};
              for (Layout l : layouts) {
                if (pass == ConvPass::kFwd) Add<CudnnConvFwd>("gpu", "cudnn", w, b, dt, l, pass);
                if (pass == ConvPass::kBwdData)
                  Add<CudnnConvBwdData>("gpu", "cudnn", w, b, dt, l, pass);
                if (pass == ConvPass::kBwdFilter)
                  Add<CudnnConvBwdFilter>("gpu", "cudnn", w, b, dt, l, pass);
              }
            }
          }
#endif
        }
      }
    }
  }
}

}  // namespace
}  // namespace dlb

DLB_BENCH_MAIN(dlb::RegisterConv)

// Data-loading family: input pipelines from files to normalised batches, per dataset of
// fixtures/workloads/dataload_*.csv x batch sizes x dtypes x layouts x worker counts. The CPU
// pipeline decodes JPEGs with TurboJPEG on worker threads (and copies each batch to the GPU when
// one is present); CIFAR-10's binary records need no decode.
#include <cstdio>

#include "benchmarks/dataload/family.h"
#include "fixtures/harness.h"
#include "kernels/data/dataset_source.h"
#include "kernels/data/loader.h"
#ifdef DLBENCH_HAVE_NVJPEG
#include "kernels/data/nvjpeg_loader.h"
#endif

namespace dlb::dataload {
namespace {

template <class Op>
void Add(const Workload& w, const std::string& dir, int batch, DType dt, Layout layout,
         int workers) {
  data::LoaderShape s;
  s.dir = dir;
  s.batch = batch;
  s.workers = workers;
  s.side = w.side;
  s.depth = data::RingDepth();
  s.to_device = WantDevice(true);
  RunConfig cfg;
  cfg.dtype = dt;
  cfg.layout = layout;
  cfg.seed = Opts().seed;
  Register<Op>("dataload", w.basics,
               {{"bs", std::to_string(batch)},
                {"dt", std::string(Name(dt))},
                {"fmt", Name(layout)},
                {"workers", std::to_string(workers)}},
               s, cfg, CaseInfo::Of(w.basics, dt, batch, nullptr));
}

std::string Describe(const Workload& w, const std::string& dir) {
  char buf[160];
  if (w.format == "cifar10") {
    std::snprintf(buf, sizeof buf, " (%lld records)",
                  static_cast<long long>(data::CachedCifar10(dir)->count));
  } else {
    const auto f = data::CachedImageFolder(dir);
    std::snprintf(buf, sizeof buf, " (%zu images, %zu classes, mean %.0f bytes)", f->files.size(),
                  f->classes.size(), f->MeanBytes());
  }
  return w.basics.name + ": " + dir + buf;
}

void RegisterCases() {
  benchmark::AddCustomContext(std::string(schema::kCtxTurboJpegVersion), data::TurboJpegVersion());
  std::string datasets;
  const auto batches = BatchSizes({32}, {64, 256}, {16, 32, 64, 128, 256, 512});
  const std::vector<int> workers = data::WorkerCounts(Opts().tier == Tier::kSmoke);
  for (const Workload& w : TierWorkloads()) {
    const std::string dir = OpenDatasetOrExit(w, "bench_dataload");
    datasets += (datasets.empty() ? "" : "; ") + Describe(w, dir);
#ifdef DLBENCH_HAVE_NVJPEG
    // The GPU pipeline (where the toolkit has nvJPEG; absent otherwise, as configure says): its
    // workers only read files; f32 NCHW and bf16 NHWC with 4 reader threads.
    if (w.format == "imagefolder" && WantDevice(true))
      for (int b : batches)
        for (DType dt : DTypes({DType::kF32, DType::kBF16}))
          Add<data::NvJpegLoader>(w, dir, b, dt, dt == DType::kBF16 ? Layout::kNHWC : Layout::kNCHW,
                                  4);
#endif
    if (!WantDevice(false)) continue;
    // f32 NCHW across the sweep; bf16 NHWC (what an amp_bf16 channels-last step eats) at the
    // largest worker count.
    for (int b : batches)
      for (DType dt : DTypes({DType::kF32, DType::kBF16}))
        for (int n : workers) {
          const Layout layout = dt == DType::kBF16 ? Layout::kNHWC : Layout::kNCHW;
          if (dt != DType::kF32 && n != workers.back() && !Opts().dtypes.size()) continue;
          if (w.format == "cifar10")
            Add<data::CifarLoader>(w, dir, b, dt, layout, n);
          else
            Add<data::TurboJpegLoader>(w, dir, b, dt, layout, n);
        }
  }
  benchmark::AddCustomContext(std::string(schema::kCtxDatasets), datasets);
}

}  // namespace
}  // namespace dlb::dataload

DLB_BENCH_MAIN((dlb::Family{"dataload", dlb::dataload::Flags(), dlb::dataload::RegisterCases}))

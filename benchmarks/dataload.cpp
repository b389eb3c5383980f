// Data-loading family: input pipelines from files to normalised batches, per dataset of
// fixtures/workloads/dataload_*.csv x batch sizes x dtypes x layouts x worker counts; the tier
// matrix in benchmarks/dataload/matrix.h. The CPU pipeline decodes JPEGs with TurboJPEG on worker
// threads (and copies each batch to the GPU when one is present); CIFAR-10's binary records need
// no decode; the GPU pipeline decodes with nvJPEG.
#include <string>
#include <vector>

#include "benchmarks/dataload/family.h"
#include "benchmarks/dataload/matrix.h"
#include "benchmarks/dataload/ops.h"
#include "fixtures/harness.h"

namespace dlb::dataload {
namespace {

void RegisterCases() {
  benchmark::AddCustomContext(std::string(schema::kCtxTurboJpegVersion), data::TurboJpegVersion());
  std::string datasets;
  const std::vector<int> batches = BatchSizes(matrix::kBatches);
  const std::vector<int> workers = data::WorkerCounts(matrix::kTwoWorkers.Now());
  for (const Workload& w : TierWorkloads()) {
    auto add = [&](const std::string& dir) {
      if (w.format == "imagefolder")
        ForEachOp(GpuLoaders{}, [&](auto tag) {
          using Op = typename decltype(tag)::type;
          for (int b : batches)
            for (DType dt : DTypes(matrix::kDTypes)) Add<Op>(w, dir, b, dt, matrix::kGpuReaders);
        });
      for (int b : batches)
        for (DType dt : DTypes(matrix::kDTypes))
          for (int n : workers) {
            // Beyond f32, only the largest worker count, unless --dlb_dtypes asks for the dtype.
            if (dt != DType::kF32 && n != workers.back() && Opts().dtypes.empty()) continue;
            if (w.format == "cifar10")
              Add<data::CifarLoader>(w, dir, b, dt, n);
            else
              Add<data::TurboJpegLoader>(w, dir, b, dt, n);
          }
    };
    // A workload's dataset is generated (or checked) only for a run that times one of its cases.
    if (!AnySelected(NamesOf([&] { add(""); }))) continue;
    const std::string dir = OpenDatasetOrExit(w, "bench_dataload");
    datasets += (datasets.empty() ? "" : "; ") + Describe(w, dir);
    add(dir);
  }
  benchmark::AddCustomContext(std::string(schema::kCtxDatasets), datasets);
}

}  // namespace
}  // namespace dlb::dataload

DLB_BENCH_MAIN((dlb::Family{"dataload", dlb::dataload::Flags(), dlb::dataload::RegisterCases}))

// The data-loading family's own code: its workloads (fixtures/workloads/dataload_*.csv), and its
// flags and datasets, which kernels/data/dataset_source.h keeps (the fed training steps share
// them).
#pragma once

#include <string>
#include <vector>

#include "fixtures/harness.h"
#include "kernels/data/dataset_source.h"
#include "kernels/data/loader.h"

namespace dlb::dataload {

struct Workload {
  WorkloadBasics basics;
  std::string format;  // imagefolder | cifar10
  int side = 224;
};
std::vector<Workload> LoadWorkloads(const std::string& path);
std::vector<Workload> TierWorkloads();

// --dlb_data, --dlb_workers, --dlb_dataload_images, --dlb_dataload_depth (data::SourceFlags).
std::vector<FlagSpec> Flags();

// The workload's dataset, found or generated for the tier and loaded before any case is
// registered (data::OpenDatasetOrExit): an unusable folder stops the run with exit 2.
std::string OpenDatasetOrExit(const Workload& w, const char* binary);

// "name: dir (N images, C classes, mean B bytes)" or "(N records)": the run's datasets context.
std::string Describe(const Workload& w, const std::string& dir);

// The layout of a batch of dt: NHWC for bf16 (what a channels-last amp step eats), else NCHW.
inline Layout LayoutOf(DType dt) { return dt == DType::kBF16 ? Layout::kNHWC : Layout::kNCHW; }

// Registers one case: dataload/<device>/<backend>/<workload>/bs:/dt:/fmt:/workers:.
template <class Op>
void Add(const Workload& w, const std::string& dir, int batch, DType dt, int workers) {
  data::LoaderShape s;
  s.dir = dir;
  s.batch = batch;
  s.workers = workers;
  s.side = w.side;
  s.depth = data::RingDepth();
  s.to_device = WantDevice(true);
  RunConfig cfg;
  cfg.dtype = dt;
  cfg.layout = LayoutOf(dt);
  cfg.seed = Opts().seed;
  Register<Op>("dataload", w.basics,
               {{key::kBatch, std::to_string(batch)},
                {key::kDType, std::string(Name(dt))},
                {key::kLayout, Name(cfg.layout)},
                {key::kWorkers, std::to_string(workers)}},
               s, cfg, CaseInfo::Of(w.basics, dt, batch, nullptr));
}

}  // namespace dlb::dataload

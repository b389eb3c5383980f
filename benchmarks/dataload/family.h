// The data-loading family's own code: its workloads (fixtures/workloads/dataload_*.csv), flags,
// the datasets it reads (found with --dlb_data, or generated once into the user's cache), and the
// worker counts and batch sizes each tier sweeps.
#pragma once

#include <string>
#include <vector>

#include "fixtures/flags.h"
#include "fixtures/workloads.h"

namespace dlb::dataload {

struct Workload {
  WorkloadBasics basics;
  std::string format;  // imagefolder | cifar10
  int side = 224;
};
std::vector<Workload> LoadWorkloads(const std::string& path);
std::vector<Workload> TierWorkloads();

// --dlb_data, --dlb_workers, --dlb_dataload_images, --dlb_dataload_depth.
std::vector<FlagSpec> Flags();

// The folder a workload reads: --dlb_data when its content is of the workload's format, else the
// generated dataset in the user's cache (made on first use, with a progress line). Throws
// data::DataError when --dlb_data is unusable or nothing can be generated.
std::string DatasetDir(const Workload& w);
// DatasetDir, then the dataset loaded (scanned, or CIFAR-10 read) before any case is registered:
// an unusable folder stops the run with one line "<binary>: <why>" and exit 2.
std::string OpenDatasetOrExit(const Workload& w, const char* binary);

// Images in the generated datasets: smoke 256, default 4096, full 20000 (--dlb_dataload_images).
int64_t GeneratedImages();
// Worker counts: smoke {2}; default 1, 2, 4, ... up to the CPUs this process may use, and that
// count; full the same (--dlb_workers).
std::vector<int> WorkerCounts();
// Batches in each pipeline's ring (--dlb_dataload_depth, default 4).
int RingDepth();

}  // namespace dlb::dataload

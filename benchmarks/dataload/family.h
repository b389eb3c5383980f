// The data-loading family's own code: its workloads (fixtures/workloads/dataload_*.csv), and its
// flags and datasets, which kernels/data/dataset_source.h keeps (the fed training steps share
// them).
#pragma once

#include <string>
#include <vector>

#include "fixtures/case/workloads.h"
#include "fixtures/run/flags.h"

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

}  // namespace dlb::dataload

// Where the families that read a dataset (data loading, and the training steps its pipelines feed)
// get it, and the flags they share for it: --dlb_data, --dlb_workers, --dlb_dataload_images and
// --dlb_dataload_depth. A folder given with --dlb_data is read when its content is of the wanted
// format; else the generator (generator.h) makes one, once, in the user's cache.
//
// The harness is not included here (kernels/ sit below it): a family hands these flags to it as
// its own, and tells the tier as `smoke` / `full`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dlb::data {

// One of the flags: its name without the --dlb_ prefix, its help, and the setter, which keeps the
// value and returns "" when fine, else what is wrong with it.
struct SourceFlag {
  std::string name;
  std::string help;
  std::function<std::string(const std::string&)> set;
};
// --dlb_data, --dlb_workers, --dlb_dataload_images, --dlb_dataload_depth, in that order.
std::vector<SourceFlag> SourceFlags();

// Images in a generated dataset: smoke 256, default 4096, full 20000 (--dlb_dataload_images).
int64_t GeneratedImages(bool smoke, bool full);
// Worker counts: smoke {2}; otherwise 1, 2, 4, ... up to the CPUs this process may use, and that
// count (--dlb_workers).
std::vector<int> WorkerCounts(bool smoke);
// Batches in each pipeline's ring (--dlb_dataload_depth, default 4).
int RingDepth();

// The dataset a case reads.
struct DatasetWant {
  bool cifar = false;     // CIFAR-10's binary batches; else an ImageFolder of JPEGs
  int64_t images = 0;     // of a generated one (GeneratedImages)
  std::string cache_dir;  // the user's dlbench cache folder; "" when there is none
};

// The folder to read: --dlb_data when its content is of the wanted format, else the generated
// dataset in <cache_dir>/datasets (made on first use, with progress lines on stderr). Throws
// DataError when --dlb_data is unusable or nothing can be generated.
std::string DatasetDir(const DatasetWant& want);
// DatasetDir, then the dataset loaded (scanned, or CIFAR-10 read) before any case is registered:
// an unusable folder stops the run with one line "<binary>: <why>" and exit 2.
std::string OpenDatasetOrExit(const DatasetWant& want, const char* binary);

}  // namespace dlb::data

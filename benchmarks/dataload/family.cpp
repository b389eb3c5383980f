#include "benchmarks/dataload/family.h"

#include <cstdio>

#include "benchmarks/dataload/matrix.h"
#include "kernels/data/dataset_source.h"

namespace dlb::dataload {

std::vector<FlagSpec> Flags() {
  std::vector<FlagSpec> out;
  for (data::SourceFlag& f : data::SourceFlags())
    out.push_back({std::move(f.name), std::move(f.help), std::move(f.set)});
  return out;
}

std::vector<Workload> LoadWorkloads(const std::string& path) {
  std::vector<Workload> out;
  std::vector<std::string> seen;
  for (const CsvRow& row : LoadCsv(path, {"name", "count", "format", "side", "tier"})) {
    Workload w;
    w.basics = ReadBasics(row, &seen);
    w.format = row.Str("format");
    if (w.format != "imagefolder" && w.format != "cifar10")
      row.Fail("column 'format': expected imagefolder or cifar10, got '" + w.format + "'");
    const int64_t side = row.Int("side");
    if (side < 8 || side > 4096) row.Fail("column 'side': expected 8..4096");
    if (w.format == "cifar10" && side != 32) row.Fail("column 'side': CIFAR-10 images are 32");
    w.side = int(side);
    out.push_back(std::move(w));
  }
  return out;
}

std::vector<Workload> TierWorkloads() {
  return TierRows<Workload>("dataload_", Opts().tier, LoadWorkloads);
}

std::string OpenDatasetOrExit(const Workload& w, const char* binary) {
  data::DatasetWant want;
  want.cifar = w.format == "cifar10";
  want.images = data::GeneratedImages(matrix::kSmallDataset.Now(), matrix::kLargeDataset.Now());
  want.cache_dir = UserCacheDir();
  return data::OpenDatasetOrExit(want, binary);
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

}  // namespace dlb::dataload

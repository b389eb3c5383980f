#include "benchmarks/train/loader_fed.h"

#ifdef DLBENCH_HAVE_TORCH_LOADER_FED
#include <algorithm>
#include <string>
#include <utility>

#include "benchmarks/train/family.h"
#include "benchmarks/train/matrix.h"
#include "fixtures/harness.h"
#include "kernels/data/dataset_source.h"
#include "kernels/torch/loader_fed_step.h"
#endif

namespace dlb::train {

#ifdef DLBENCH_HAVE_TORCH_LOADER_FED

std::vector<FlagSpec> LoaderFedFlags() {
  std::vector<FlagSpec> flags;
  for (data::SourceFlag& f : data::SourceFlags())
    flags.push_back({std::move(f.name), std::move(f.help), std::move(f.set)});
  return flags;
}

// Default tier: ResNet-18 at 224, bs 256, amp_bf16 NHWC in a graph, fed by the CPU pipeline on
// every core and by nvJPEG; full: also the cat/dog CNN at 128 and 1, 2, 4, ... workers.
void RegisterLoaderFedCases() {
  const std::vector<std::string>& models = matrix::kLoaderFedModels.Now();
  if (models.empty()) return;
  std::vector<int> workers = data::WorkerCounts(false);
  if (!matrix::kLoaderFedEveryWorkerCount.Now()) workers = {workers.back()};
  data::DatasetWant want;  // an ImageFolder
  want.images = data::GeneratedImages(false, matrix::kLoaderFedFullDataset.Now());
  want.cache_dir = UserCacheDir();
  for (const Model& m : TierModels()) {
    if (std::find(models.begin(), models.end(), m.basics.name) == models.end()) continue;
    const Config c = AmpNhwcTrain(true);
    const int batch = m.basics.name == "resnet18" ? matrix::kLoaderFedResNet18Batch
                                                  : matrix::kLoaderFedOtherBatch;
    auto add = [&](const std::string& dir) {
      for (int n : workers)
        for (bool nvjpeg : {false, true}) {
          if (nvjpeg && n != workers.back()) continue;
          libtorch::LoaderFedShape s;
          s.step = ShapeOf(m, batch, c);
          s.loader.dir = dir;
          s.loader.workers = nvjpeg ? 4 : n;
          s.loader.side = int(m.shape.image);
          s.loader.depth = data::RingDepth();
          s.nvjpeg = nvjpeg;
          const RunConfig cfg = RunConfigOf(c);
          NameKeys keys = KeysOf(m, batch, c, true);
          keys.push_back({key::kLoader, nvjpeg ? "nvjpeg" : "turbojpeg"});
          keys.push_back({key::kWorkers, std::to_string(s.loader.workers)});
          Register<libtorch::LoaderFedStepGpu, libtorch::LoaderFedShape>(
              "train", m.basics, std::move(keys), s, cfg,
              CaseInfo::Of(m.basics, DType::kBF16, batch, nullptr));
        }
    };
    // The dataset is generated (or checked) only for a run that times one of these cases.
    if (!AnySelected(NamesOf([&] { add(""); }))) continue;
    add(data::OpenDatasetOrExit(want, "bench_train"));
  }
}

#else

std::vector<FlagSpec> LoaderFedFlags() { return {}; }
void RegisterLoaderFedCases() {}

#endif

}  // namespace dlb::train

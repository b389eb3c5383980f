// Training-step family on LibTorch: every model of fixtures/workloads/train_models.csv x the
// tier's batch sizes x configurations, on the CPU (LibTorch's CPU path) and the GPU (cuDNN and
// cuBLAS through LibTorch, eager or the whole step in a CUDA graph).
#include <benchmark/benchmark.h>

#include "benchmarks/train/family.h"
#include "fixtures/main.h"
#include "fixtures/op_list.h"
#include "kernels/torch/step.h"
#ifdef DLBENCH_HAVE_TORCH_FED
#include "benchmarks/dataload/family.h"
#include "kernels/torch/fed_step.h"
#endif

namespace dlb::train {
namespace {

#ifdef DLBENCH_HAVE_TORCH_CUDA
using Ops = OpList<libtorch::TorchStepCpu, libtorch::TorchStepGpu>;
#else
using Ops = OpList<libtorch::TorchStepCpu>;
#endif

#ifdef DLBENCH_HAVE_TORCH_FED
// End to end: the GPU step fed by a real input pipeline (the data-loading family's) instead of
// its static batch; the case also times the step alone and reports starvation. Default tier:
// ResNet-18 at 224, bs 256, amp_bf16 NHWC in a graph, fed by the CPU pipeline on every core and
// by nvJPEG; full: also the cat/dog CNN at 128 and 1, 2, 4, ... workers.
void RegisterFedCases() {
  if (!WantDevice(true) || Opts().tier == Tier::kSmoke) return;
  const bool full = Opts().tier == Tier::kFull;
  std::vector<int> workers = dataload::WorkerCounts();
  if (!full) workers = {workers.back()};
  for (const Model& m : TierModels()) {
    if (m.basics.name != "resnet18" && !(full && m.basics.name == "catdog128")) continue;
    dataload::Workload w;
    w.basics = m.basics;
    w.format = "imagefolder";
    w.side = int(m.shape.image);
    const std::string dir = dataload::OpenDatasetOrExit(w, "bench_train");
    Config c;
    c.amp = true;
    c.dtype = DType::kBF16;
    c.layout = Layout::kNHWC;
    c.graph = true;
    const int batch = m.basics.name == "resnet18" ? 256 : 64;
    for (int n : workers)
      for (bool nvjpeg : {false, true}) {
        if (nvjpeg && n != workers.back()) continue;
        libtorch::FedShape s;
        s.step = m.shape;
        s.step.batch = batch;
        s.step.pass = Pass::kTrain;
        s.step.graph = true;
        s.step.amp = true;
        s.loader.dir = dir;
        s.loader.workers = nvjpeg ? 4 : n;
        s.loader.side = int(m.shape.image);
        s.loader.depth = dataload::RingDepth();
        s.nvjpeg = nvjpeg;
        RunConfig cfg;
        cfg.dtype = c.dtype;
        cfg.layout = c.layout;
        cfg.seed = Opts().seed;
        NameKeys keys = {{"bs", std::to_string(batch)}, {"dt", DtName(c)},
                         {"fmt", Name(c.layout)},       {"pass", "train"},
                         {"graph", "1"},                {"loader", nvjpeg ? "nvjpeg" : "turbojpeg"},
                         {"workers", std::to_string(s.loader.workers)}};
        NoteEpochItems(BuildName({"train", "gpu", libtorch::FedStepGpu::kBackend, m.basics.name,
                                  keys}),
                       m.epoch_items);
        Register<libtorch::FedStepGpu, libtorch::FedShape>(
            "train", m.basics, std::move(keys), s, cfg,
            CaseInfo::Of(m.basics, DType::kBF16, batch, nullptr));
      }
  }
}
#endif

std::vector<FlagSpec> TrainFlags() {
#ifdef DLBENCH_HAVE_TORCH_FED
  return dataload::Flags();  // --dlb_data, --dlb_workers, ... for the fed steps
#else
  return {};
#endif
}

void RegisterCases() {
  benchmark::AddCustomContext(std::string(schema::kCtxTorchVersion), libtorch::TorchVersion());
  benchmark::AddCustomContext(std::string(schema::kCtxTorchCuda),
                              libtorch::TorchHasCuda() ? "yes" : "no");
  libtorch::SetTorchThreads(dlb::Opts().threads);
  benchmark::AddCustomContext(std::string(schema::kCtxTorchThreads),
                              std::to_string(libtorch::TorchThreads()));
  for (const Model& m : TierModels())
    for (int b : Batches(m))
      ForEachOp(Ops{}, [&](auto tag) {
        using Op = typename decltype(tag)::type;
        if (!WantDevice(Op::kGpu)) return;
        for (const Config& c : Configs(Op::kGpu)) {
          if (m.shape.image == 0 && c.layout != Layout::kNCHW) continue;  // the MLP has no layout
          Add<Op>(m, b, c);
        }
      });
#ifdef DLBENCH_HAVE_TORCH_FED
  RegisterFedCases();
#endif
}

}  // namespace
}  // namespace dlb::train

DLB_BENCH_MAIN((dlb::Family{"train", dlb::train::TrainFlags(), dlb::train::RegisterCases}))

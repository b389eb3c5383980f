// Training-step family on LibTorch: every model of fixtures/workloads/train_models.csv x the
// tier's batch sizes x configurations, on the CPU (LibTorch's CPU path) and the GPU (cuDNN and
// cuBLAS through LibTorch, eager or the whole step in a CUDA graph); and the transformers of
// fixtures/workloads/train_transformers.csv at the tier's batches and sequence lengths.
#include <benchmark/benchmark.h>

#include "benchmarks/train/family.h"
#include "fixtures/main.h"
#include "fixtures/op_list.h"
#include "kernels/backends.h"
#include "kernels/torch/step.h"
#ifdef DLBENCH_HAVE_TORCH_FED
#include "kernels/data/dataset_source.h"
#include "kernels/torch/fed_step.h"
#endif
#ifdef DLBENCH_HAVE_TORCH_DDP
#include <algorithm>

#include "kernels/cuda/device.h"
#include "kernels/torch/ddp_step.h"
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
  std::vector<int> workers = data::WorkerCounts(false);
  if (!full) workers = {workers.back()};
  data::DatasetWant want;  // an ImageFolder
  want.images = data::GeneratedImages(false, full);
  want.cache_dir = UserCacheDir();
  for (const Model& m : TierModels()) {
    if (m.basics.name != "resnet18" && !(full && m.basics.name == "catdog128")) continue;
    const std::string dir = data::OpenDatasetOrExit(want, "bench_train");
    const Config c = AmpNhwcTrain(true);
    const int batch = m.basics.name == "resnet18" ? 256 : 64;
    for (int n : workers)
      for (bool nvjpeg : {false, true}) {
        if (nvjpeg && n != workers.back()) continue;
        libtorch::FedShape s;
        s.step = ShapeOf(m, batch, c);
        s.loader.dir = dir;
        s.loader.workers = nvjpeg ? 4 : n;
        s.loader.side = int(m.shape.image);
        s.loader.depth = data::RingDepth();
        s.nvjpeg = nvjpeg;
        const RunConfig cfg = RunConfigOf(c);
        NameKeys keys = KeysOf(m, batch, c, true);
        keys.push_back({"loader", nvjpeg ? "nvjpeg" : "turbojpeg"});
        keys.push_back({"workers", std::to_string(s.loader.workers)});
        NoteEpochItems(
            BuildName({"train", "gpu", libtorch::FedStepGpu::kBackend, m.basics.name, keys}),
            m.epoch_items);
        Register<libtorch::FedStepGpu, libtorch::FedShape>(
            "train", m.basics, std::move(keys), s, cfg,
            CaseInfo::Of(m.basics, DType::kBF16, batch, nullptr));
      }
  }
}
#endif

#ifdef DLBENCH_HAVE_TORCH_DDP
std::vector<int64_t> g_ddp_gpus;  // --dlb_train_gpus; empty: the tier's

// The GPU counts of the data-parallel steps: default every local GPU (at least 2: on fewer the
// cases say they are unsupported); full 2, 4, 8, ... up to every local GPU, and every GPU;
// --dlb_train_gpus replaces them (1 runs the data-parallel machinery on one GPU).
std::vector<int> DdpGpuCounts() {
  if (!g_ddp_gpus.empty()) return std::vector<int>(g_ddp_gpus.begin(), g_ddp_gpus.end());
  const int have = std::max(2, cuda::DeviceCount());
  if (Opts().tier != Tier::kFull) return {have};
  std::vector<int> out;
  for (int n = 2; n < have; n *= 2) out.push_back(n);
  out.push_back(have);
  return out;
}

struct DdpSteps : TrainSteps<libtorch::DdpStepGpu, libtorch::DdpShape> {
  static void Record(benchmark::State& st, const libtorch::DdpStepGpu& op, const CaseInfo& info,
                     const RunConfig& cfg, const Timing& t, int launches, Verdict* verdict) {
    TrainSteps<libtorch::DdpStepGpu, libtorch::DdpShape>::Record(st, op, info, cfg, t, launches,
                                                                 verdict);
    if (t.iterations == 0 || t.total <= 0) return;
    const double step_s = t.Mean();
    auto set = [&st](std::string_view name, double v) { st.counters[std::string(name)] = v; };
    set(schema::kPerGpuItemsPerS, op.cost().items / step_s / double(op.gpus()));
    if (op.single_step_s() <= 0) return;
    set(schema::kScalingEfficiency, op.single_step_s() / step_s);
    set(schema::kExposedCommS, std::max(0.0, step_s - op.single_step_s()));
  }
};

// Data parallel: the step on n GPUs at a per-GPU batch, gradients all-reduced as backward runs.
// Default: ResNet-18 at 224, 64 and 256 images per GPU, amp_bf16 NHWC in a CUDA graph; full:
// also ResNet-50, and eager.
void RegisterDdpCases() {
  if (!WantDevice(true) || Opts().tier == Tier::kSmoke) return;
  const bool full = Opts().tier == Tier::kFull;
  for (const Model& m : TierModels()) {
    if (m.basics.name != "resnet18" && !(full && m.basics.name == "resnet50")) continue;
    for (int batch : {64, 256})
      for (bool graph : {true, false}) {
        if (!graph && !full) continue;
        for (int n : DdpGpuCounts()) {
          const Config c = AmpNhwcTrain(graph);
          libtorch::DdpShape s;
          s.step = ShapeOf(m, batch, c);
          s.gpus = n;
          const RunConfig cfg = RunConfigOf(c);
          NameKeys keys = KeysOf(m, batch, c, true);
          keys.push_back({"gpus", std::to_string(n)});
          NoteEpochItems(
              BuildName({"train", "gpu", libtorch::DdpStepGpu::kBackend, m.basics.name, keys}),
              m.epoch_items);
          // The case's batch is every GPU's: the epoch is that many images a step.
          Register<libtorch::DdpStepGpu, libtorch::DdpShape, DdpSteps>(
              "train", m.basics, std::move(keys), s, cfg,
              CaseInfo::Of(m.basics, DType::kBF16, batch * n, nullptr));
        }
      }
  }
}
#endif

std::vector<FlagSpec> TrainFlags() {
  std::vector<FlagSpec> flags;
#ifdef DLBENCH_HAVE_TORCH_FED
  // --dlb_data, --dlb_workers, ... for the fed steps, as the data-loading family has them.
  for (data::SourceFlag& f : data::SourceFlags())
    flags.push_back({std::move(f.name), std::move(f.help), std::move(f.set)});
#endif
#ifdef DLBENCH_HAVE_TORCH_DDP
  flags.push_back(IntListFlag("train_gpus",
                              "GPU counts of the data-parallel steps, comma-separated (default: "
                              "every GPU; full tier: 2, 4, ... every GPU)",
                              1, 1024, &g_ddp_gpus));
#endif
  return flags;
}

void RegisterCases() {
  benchmark::AddCustomContext(std::string(schema::kCtxTorchVersion), libtorch::TorchVersion());
  benchmark::AddCustomContext(std::string(schema::kCtxTorchCuda),
                              libtorch::TorchHasCuda() ? "yes" : "no");
  // The count oneDNN was given before any case (fixtures/main.cpp): the same cores for both, and
  // not LibTorch's own default, which cpuinfo can make fewer.
  libtorch::SetTorchThreads(backends::CpuThreads());
  benchmark::AddCustomContext(std::string(schema::kCtxTorchThreads),
                              std::to_string(libtorch::TorchThreads()));
  for (const Model& m : TierModels()) {
    if (m.shape.seq > 0) {
      ForEachOp(Ops{}, [&](auto tag) {
        using Op = typename decltype(tag)::type;
        if (!WantDevice(Op::kGpu)) return;
        for (const TransformerCase& tc : TransformerCases(m, Op::kGpu)) AddTransformer<Op>(m, tc);
      });
      continue;
    }
    for (int b : AnyDeviceBatches(m))
      ForEachOp(Ops{}, [&](auto tag) {
        using Op = typename decltype(tag)::type;
        if (!WantDevice(Op::kGpu) || !Contains(Batches(m, Op::kGpu), b)) return;
        for (const Config& c : Configs(Op::kGpu)) {
          if (m.shape.image == 0 && c.layout != Layout::kNCHW) continue;  // the MLP has no layout
          Add<Op>(m, b, c);
        }
      });
  }
#ifdef DLBENCH_HAVE_TORCH_FED
  RegisterFedCases();
#endif
#ifdef DLBENCH_HAVE_TORCH_DDP
  RegisterDdpCases();
#endif
}

}  // namespace
}  // namespace dlb::train

DLB_BENCH_MAIN((dlb::Family{"train", dlb::train::TrainFlags(), dlb::train::RegisterCases}))

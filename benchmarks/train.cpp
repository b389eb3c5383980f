// Training-step family on LibTorch: every model of fixtures/workloads/train_models.csv x the
// tier's batch sizes x configurations, on the CPU (LibTorch's CPU path) and the GPU (cuDNN and
// cuBLAS through LibTorch, eager or the whole step in a CUDA graph); and the transformers of
// fixtures/workloads/train_transformers.csv at the tier's batches and sequence lengths.
#include <benchmark/benchmark.h>

#include "benchmarks/train/family.h"
#include "fixtures/case/op_list.h"
#include "fixtures/harness.h"
#include "kernels/backends.h"
#include "kernels/torch/step.h"
#ifdef DLBENCH_HAVE_TORCH_LOADER_FED
#include "kernels/data/dataset_source.h"
#include "kernels/torch/loader_fed_step.h"
#endif
#ifdef DLBENCH_HAVE_TORCH_DDP
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "fixtures/run/lockstep.h"
#include "kernels/cuda/device.h"
#include "kernels/nccl/comm.h"
#include "kernels/nccl/launch.h"
#include "kernels/torch/ddp_step.h"
#endif

namespace dlb::train {
namespace {

#ifdef DLBENCH_HAVE_TORCH_CUDA
using Ops = OpList<libtorch::TorchStepCpu, libtorch::TorchStepGpu>;
#else
using Ops = OpList<libtorch::TorchStepCpu>;
#endif

#ifdef DLBENCH_HAVE_TORCH_LOADER_FED
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
        libtorch::LoaderFedShape s;
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
            BuildName({"train", "gpu", libtorch::LoaderFedStepGpu::kBackend, m.basics.name, keys}),
            m.epoch_items);
        Register<libtorch::LoaderFedStepGpu, libtorch::LoaderFedShape>(
            "train", m.basics, std::move(keys), s, cfg,
            CaseInfo::Of(m.basics, DType::kBF16, batch, nullptr));
      }
  }
}
#endif

#ifdef DLBENCH_HAVE_TORCH_DDP
std::vector<int64_t> g_ddp_gpus;   // --dlb_train_gpus; empty: the tier's
nccl::Launch* g_launch = nullptr;  // set by main: how this process was started

// Several processes (mpirun, srun, torchrun): one GPU each, only the data-parallel cases.
bool MultiProcess() { return g_launch && g_launch->size() > 1; }

// The GPU counts of the data-parallel steps: default every local GPU (at least 2: on fewer the
// cases say they are unsupported); full 2, 4, 8, ... up to every local GPU, and every GPU;
// --dlb_train_gpus replaces them (1 runs the data-parallel machinery on one GPU). Several
// processes: their number.
std::vector<int> DdpGpuCounts() {
  if (MultiProcess()) {
    for (int64_t n : g_ddp_gpus)
      if (n != g_launch->size())
        throw Error("--dlb_train_gpus=" + std::to_string(n) + ": with several processes the " +
                    "data-parallel step runs on one GPU per process, " +
                    std::to_string(g_launch->size()) + " here");
    return {g_launch->size()};
  }
  if (!g_ddp_gpus.empty()) return std::vector<int>(g_ddp_gpus.begin(), g_ddp_gpus.end());
  const int have = std::max(2, cuda::DeviceCount());
  if (Opts().tier != Tier::kFull) return {have};
  std::vector<int> out;
  for (int n = 2; n < have; n *= 2) out.push_back(n);
  out.push_back(have);
  return out;
}

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// One process per GPU: every step that a rank could fail alone is agreed (a rank's failure is
// every rank's), and the calibration and timed spans are the slowest rank's
// (fixtures/run/lockstep.h). A warm-up of at least this long (and 2 steps) of every GPU together.
constexpr double kLockstepWarmupSeconds = 1;

struct DdpSteps : TrainSteps<libtorch::DdpStepGpu, libtorch::DdpShape> {
  using Base = TrainSteps<libtorch::DdpStepGpu, libtorch::DdpShape>;
  static std::string Support(const libtorch::DdpShape& shape, const RunConfig& cfg) {
    if (!MultiProcess()) return Base::Support(shape, cfg);
    // A rank gone (killed, crashed) ends the launch's agreements with one line: every case left
    // fails with it instead of waiting.
    try {
      return AgreedSupport(shape, cfg);
    } catch (const std::exception& e) {
      return e.what();
    }
  }
  static std::string AgreedSupport(const libtorch::DdpShape& shape, const RunConfig& cfg) {
    const std::string key = shape.step.model + " bs " + std::to_string(shape.step.batch) +
                            " graph " + std::to_string(shape.step.graph) + " on " +
                            std::to_string(shape.gpus) + " GPUs";
    if (!g_launch->Same(Fnv1a(key)))
      return "the processes of this run are at different cases (started with different flags or "
             "environments?); this one is at " +
             key;
    return g_launch->FirstError(Base::Support(shape, cfg));
  }
  static std::shared_ptr<libtorch::DdpStepGpu> Build(const libtorch::DdpShape& shape,
                                                     const RunConfig& cfg) {
    if (!MultiProcess()) return Base::Build(shape, cfg);
    std::shared_ptr<libtorch::DdpStepGpu> op;
    std::string why;
    try {
      op = Base::Build(shape, cfg);
    } catch (...) {
      why = FailureMessage(std::current_exception());
    }
    why = g_launch->FirstError(why);
    if (!why.empty()) throw Error(why);
    return op;
  }
  static int Calibrate(libtorch::DdpStepGpu& op) {
    if (!MultiProcess()) return Base::Calibrate(op);
    // The one-GPU reference first: it leaves every GPU but rank 0's idle (their clocks drop), and
    // the warm-up after it brings them back before the timed spans.
    op.MeasurePhases();
    return LockstepCalibrate(op, *g_launch, kLockstepWarmupSeconds);
  }
  static Timing Time(benchmark::State& st, libtorch::DdpStepGpu& op, int launches) {
    if (!MultiProcess()) return Base::Time(st, op, launches);
    return LockstepTime(st, op, launches, *g_launch);
  }
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

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown host";
  return buf;
}

// The launch and every rank's host and GPU (the collectives family's context keys). Collective:
// every process calls it, in the same place (registration).
void AddLaunchContext() {
  const int devices = cuda::DeviceCount();
  auto gpu = [](int d) { return "GPU " + std::to_string(d) + ": " + nccl::DeviceSummary(d); };
  std::string mine;
  if (MultiProcess()) {
    mine = "rank " + std::to_string(g_launch->rank()) + ": " + HostName() + ", " +
           (devices > 0 ? gpu(g_launch->local_rank() % devices) : cuda::NoDeviceReason());
  } else if (devices == 0) {
    mine = "rank 0: " + HostName() + ", " + cuda::NoDeviceReason();
  } else {
    for (int g = 0; g < devices; ++g)
      mine += std::string(g ? "; " : "") + "rank " + std::to_string(g) + ": " + HostName() + ", " +
              gpu(g);
  }
  std::string ranks;
  for (const std::string& r : g_launch->AllGather(mine)) ranks += (ranks.empty() ? "" : "; ") + r;
  benchmark::AddCustomContext(std::string(schema::kCtxNcclVersion), nccl::Version());
  benchmark::AddCustomContext(std::string(schema::kCtxCommLaunch), g_launch->how());
  benchmark::AddCustomContext(std::string(schema::kCtxCommRanks), ranks);
}

// Data parallel: the step on n GPUs at a per-GPU batch, gradients all-reduced as backward runs.
// Default: ResNet-18 at 224, 64 and 256 images per GPU, amp_bf16 NHWC in a CUDA graph; full:
// also ResNet-50, and eager.
void RegisterDdpCases() {
  if (!WantDevice(true) || Opts().tier == Tier::kSmoke) return;
  AddLaunchContext();
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
          s.launch = g_launch;
          s.comm_timeout_s = Opts().comm_timeout_s;
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
  std::vector<FlagSpec> flags = {AutotuneFlag()};
#ifdef DLBENCH_HAVE_TORCH_LOADER_FED
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
  // The count oneDNN was given before any case (fixtures/run/main.cpp): the same cores for both,
  // and not LibTorch's own default, which cpuinfo can make fewer.
  libtorch::SetTorchThreads(backends::CpuThreads());
  benchmark::AddCustomContext(std::string(schema::kCtxTorchThreads),
                              std::to_string(libtorch::TorchThreads()));
#ifdef DLBENCH_HAVE_TORCH_DDP
  if (MultiProcess()) {
    // The other cases are one process's: under a launcher each rank would time its own copy.
    if (g_launch->rank() == 0)
      std::fprintf(stderr,
                   "bench_train: %d processes (%s): only the data-parallel cases run, one GPU "
                   "per process\n",
                   g_launch->size(), g_launch->how().c_str());
    RegisterDdpCases();
    return;
  }
#endif
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
#ifdef DLBENCH_HAVE_TORCH_LOADER_FED
  RegisterFedCases();
#endif
#ifdef DLBENCH_HAVE_TORCH_DDP
  RegisterDdpCases();
#endif
}

}  // namespace
}  // namespace dlb::train

#ifdef DLBENCH_HAVE_TORCH_DDP
// Under mpirun, srun or torchrun, one process per GPU: the launch starts first (MPI or the TCP
// rendezvous), rank 0 alone prints and writes the JSON.
int main(int argc, char** argv) {
  std::unique_ptr<dlb::nccl::Launch> launch;
  try {
    launch = dlb::nccl::StartLaunch(&argc, &argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dlbench: %s\n", e.what());
    return 1;
  }
  dlb::train::g_launch = launch.get();
  const auto get = [](const char* v) -> const char* { return std::getenv(v); };
  const bool launched =
      dlb::nccl::LauncherProcesses(get) > 0 || !dlb::nccl::DetectLaunch(get).launcher.empty();
  const int rc = dlb::LaunchedMain(
      argc, argv, dlb::Family{"train", dlb::train::TrainFlags(), dlb::train::RegisterCases},
      *launch, launched);
  dlb::train::g_launch = nullptr;
  return rc;
}
#else
DLB_BENCH_MAIN((dlb::Family{"train", dlb::train::TrainFlags(), dlb::train::RegisterCases}))
#endif

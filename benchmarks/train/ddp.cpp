#include "benchmarks/train/ddp.h"

#ifdef DLBENCH_HAVE_TORCH_DDP
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "benchmarks/train/family.h"
#include "benchmarks/train/matrix.h"
#include "fixtures/harness.h"
#include "kernels/cuda/device.h"
#include "kernels/nccl/comm.h"
#include "kernels/nccl/launch.h"
#include "kernels/torch/ddp_step.h"
#endif

namespace dlb::train {

#ifdef DLBENCH_HAVE_TORCH_DDP

namespace {

// The run's launch, as the data-parallel step takes it: bench_train's process group is always
// one (DdpLaunch).
nccl::Launch* TheLaunch() { return static_cast<nccl::Launch*>(&Processes()); }

// The GPU counts of the data-parallel steps: default every local GPU (at least 2: on fewer the
// cases say they are unsupported); full 2, 4, 8, ... up to every local GPU, and every GPU;
// --dlb_train_gpus replaces them (1 runs the data-parallel machinery on one GPU). Several
// processes: their number.
std::vector<int> DdpGpuCounts() {
  const std::vector<int64_t>& flag = FamilyOptions().gpus;
  if (MultiProcess()) {
    const int size = Processes().size();
    for (int64_t n : flag)
      if (n != size)
        throw Error("--dlb_train_gpus=" + std::to_string(n) + ": with several processes the " +
                    "data-parallel step runs on one GPU per process, " + std::to_string(size) +
                    " here");
    return {size};
  }
  if (!flag.empty()) return std::vector<int>(flag.begin(), flag.end());
  const int have = std::max(2, cuda::DeviceCount());
  if (!matrix::kDdpGpuSweep.Now()) return {have};
  std::vector<int> out;
  for (int n = 2; n < have; n *= 2) out.push_back(n);
  out.push_back(have);
  return out;
}

// One process per GPU: every step that a rank could fail alone is agreed (a rank's failure is
// every rank's), and the calibration and timed spans are the slowest rank's
// (fixtures/run/lockstep.h). One process: the training family's steps.
struct DdpCaseSteps : TrainSteps<libtorch::DdpStepGpu, libtorch::DdpShape> {
  // A warm-up of at least this long (and 2 steps) of every GPU together.
  static constexpr double kLockstepWarmupSeconds = 1;
  static constexpr double kLockstepMinSpanSeconds = 0;  // --dlb_min_launch_ms alone
  static bool InLockstep() { return MultiProcess(); }
  static std::string CaseKey(const libtorch::DdpShape& shape, const RunConfig&) {
    return shape.step.model + " bs " + std::to_string(shape.step.batch) + " graph " +
           std::to_string(shape.step.graph) + " on " + std::to_string(shape.gpus) + " GPUs";
  }
  // The one-GPU reference first: it leaves every GPU but rank 0's idle (their clocks drop), and
  // the warm-up after it brings them back before the timed spans.
  static void BeforeLockstepCalibrate(libtorch::DdpStepGpu& op) { op.MeasurePhases(); }
  static void Record(benchmark::State& st, const libtorch::DdpStepGpu& op, const CaseInfo& info,
                     const RunConfig& cfg, const Timing& t, int launches, Verdict* verdict) {
    TrainSteps<libtorch::DdpStepGpu, libtorch::DdpShape>::Record(st, op, info, cfg, t, launches,
                                                                 verdict);
    if (t.iterations == 0 || t.total <= 0) return;
    const double step_s = t.Mean();
    auto set = [&st](std::string_view name, double v) { st.counters[std::string(name)] = v; };
    set(schema::kPerGpuItemsPerS, op.cost().items / step_s / double(op.gpus()));
    if (const double tokens = op.tokens_per_step(); tokens > 0) {
      // A transformer's, as its one-GPU step reports them: mfu is the record's pct_peak (model
      // FLOPs of every GPU over every GPU's peak).
      set(schema::kTokensPerS, tokens / step_s);
      set(schema::kPerGpuTokensPerS, tokens / step_s / double(op.gpus()));
      auto pct = st.counters.find(std::string(schema::kPctPeak));
      if (pct != st.counters.end()) set(schema::kMfu, double(pct->second));
    }
    if (op.single_step_s() <= 0) return;
    set(schema::kScalingEfficiency, op.single_step_s() / step_s);
    set(schema::kExposedCommS, std::max(0.0, step_s - op.single_step_s()));
  }
};
using DdpSteps = LockstepSteps<libtorch::DdpStepGpu, libtorch::DdpShape, DdpCaseSteps>;

// The launch and every rank's host and GPU (the collectives family's context keys).
void AddDdpContext() {
  LaunchContext c;
  c.nccl_version = nccl::Version();
  c.gpu_summary = nccl::DeviceSummary;
  AddLaunchContext(c);
}

}  // namespace

StartProcesses DdpLaunch() { return nccl::StartLaunch; }

std::vector<FlagSpec> DdpFlags() {
  return {IntListFlag("train_gpus",
                      "GPU counts of the data-parallel steps, comma-separated (default: "
                      "every GPU; full tier: 2, 4, ... every GPU)",
                      1, 1024, &FamilyOptions().gpus)};
}

// Data parallel: the step on n GPUs at a per-GPU batch, gradients all-reduced as backward runs.
void RegisterDdpCases() {
  if (MultiProcess() && Processes().rank() == 0)
    // The other cases are one process's: under a launcher each rank would time its own copy.
    std::fprintf(stderr,
                 "bench_train: %d processes (%s): only the data-parallel cases run, one GPU "
                 "per process\n",
                 Processes().size(), Processes().how().c_str());
  const std::vector<std::string>& models = matrix::kDdpModels.Now();
  // Not a case filter (Register leaves out what the run leaves out): a run without the GPU writes
  // no launch context.
  if (!WantDevice(true) || models.empty()) return;
  AddDdpContext();
  for (const Model& m : TierModels()) {
    if (std::find(models.begin(), models.end(), m.basics.name) == models.end()) continue;
    // A transformer (seq > 0) at its own sequence length; its name carries seq as its one-GPU
    // step's does, so that the scaling curve finds that step (the same name less gpus).
    const bool transformer = m.shape.seq > 0;
    for (int batch : (transformer ? matrix::kDdpTransformerBatches : matrix::kDdpBatches).Now())
      for (bool graph : matrix::kDdpGraphs.Now()) {
        for (int n : DdpGpuCounts()) {
          const Config c = AmpNhwcTrain(graph);
          libtorch::DdpShape s;
          s.step = ShapeOf(m, batch, c);
          s.gpus = n;
          s.launch = TheLaunch();
          s.comm_timeout_s = dlb::Opts().comm_timeout_s;
          const RunConfig cfg = RunConfigOf(c);
          NameKeys keys = KeysOf(m, batch, c, true);
          if (transformer) keys.push_back({key::kSeq, std::to_string(m.shape.seq)});
          keys.push_back({key::kGpus, std::to_string(n)});
          // A transformer's epoch is tokens: its items are sequences.
          // The case's batch is every GPU's: the epoch is that many images a step.
          CaseInfo info = CaseInfo::Of(m.basics, DType::kBF16, batch * n, nullptr);
          info.extra =
              Epoch{transformer ? (m.epoch_items + m.shape.seq - 1) / m.shape.seq : m.epoch_items};
          Register<libtorch::DdpStepGpu, libtorch::DdpShape, DdpSteps>(
              "train", m.basics, std::move(keys), s, cfg, std::move(info));
        }
      }
  }
}

#else

StartProcesses DdpLaunch() { return {}; }
std::vector<FlagSpec> DdpFlags() { return {}; }
void RegisterDdpCases() {}

#endif

}  // namespace dlb::train

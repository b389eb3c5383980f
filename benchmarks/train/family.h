// The training-step family's own code: its model rows (fixtures/workloads/train_models.csv), its
// flags, the run's batches, configurations and transformer cases (the tier's from matrix.h), and
// how one case is added. Shared by bench_train (LibTorch) and bench_train_native (the suite's own
// MLP step on oneDNN and cuBLASLt): LibTorch 2.x carries a oneDNN of its own, so the native CPU
// step, which calls the system's, lives in its own binary. The op lists are ops.h (LibTorch) and
// native_ops.h; the step fed by an input pipeline and the data-parallel step register in
// loader_fed.h and ddp.h.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "benchmarks/train/matrix.h"
#include "fixtures/harness.h"
#include "kernels/common/op.h"
#include "kernels/common/train.h"

namespace dlb::train {

struct Model {
  WorkloadBasics basics;
  TrainShape shape;  // batch, pass, graph, amp left to the case
  std::string dataset;
  int64_t epoch_items = 0;
};
// One train_*.csv file; a malformed row throws "file:line: ...".
std::vector<Model> LoadModels(const std::string& path);
// Every train_*.csv of the workloads folder, rows above the tier left out.
std::vector<Model> TierModels();

// The family's flags' values (the flags write them).
struct Options {
  Algo autotune = Algo::kCache;  // --dlb_autotune
  std::vector<int64_t> gpus;     // --dlb_train_gpus; empty: the tier's
};
Options& FamilyOptions();

// bench_train's flags: --dlb_autotune, the loader-fed steps' (where built: loader_fed.h) and
// --dlb_train_gpus (where the data-parallel step is built: ddp.h).
std::vector<FlagSpec> Flags();

// The run's batch sizes for a model on a device (matrix::kGpuBatches and the others, by the
// row's image size and the device), or --dlb_batch_sizes.
std::vector<int> Batches(const Model& m, bool gpu);
// Every batch size of the tier for the model on either device: the GPU's, then any other.
std::vector<int> AnyDeviceBatches(const Model& m);
bool Contains(const std::vector<int>& batches, int b);

// The configurations the run's tier times on a device (matrix::kCpuConfigs, kGpuConfigs).
const std::vector<Config>& Configs(bool gpu);
std::string DtName(const Config& c);  // f32 | tf32 | amp_bf16
// The run configuration of a case in configuration c: its dtype and layout, the run's seed and
// threads.
RunConfig RunConfigOf(const Config& c);
// --dlb_autotune for the LibTorch steps (cudnn.benchmark on or off); RunConfigOf carries it.
FlagSpec AutotuneFlag();
// bf16 autocast, NHWC, training: what the end-to-end and data-parallel steps run.
Config AmpNhwcTrain(bool graph);
// A model's step at `batch` in configuration `c`, and the name keys every training case starts
// with: bs, dt[, fmt (image models)], pass[, graph (GPU)].
TrainShape ShapeOf(const Model& m, int batch, const Config& c);
NameKeys KeysOf(const Model& m, int batch, const Config& c, bool gpu);

// The transformer cases of the run on a device (models whose shape has seq > 0): the matrix's
// transformer entries, picked by the row (the tiny GPT, GPT, the others); --dlb_batch_sizes
// replaces the batches.
struct TransformerCase {
  int batch = 0;
  int64_t seq = 0;
  Config config;
};
std::vector<TransformerCase> TransformerCases(const Model& m, bool gpu);

// A training case's epoch: the items of its model's dataset, in the case's own items (sequences
// for a transformer), carried in its CaseInfo (extra) for the record's epoch time.
struct Epoch {
  int64_t items = 0;
};

// The harness's steps with two additions: after calibration the op measures its phases
// (forward, backward, optimizer) in a separate un-graphed pass, so the timed runs are undisturbed;
// the record adds the projected epoch time.
template <class Op, class Shape = TrainShape>
struct TrainSteps : DefaultSteps<Op, Shape> {
  static int Calibrate(Op& op) {
    const int launches = CalibrateStep(op);
    op.MeasurePhases();
    return launches;
  }
  static void Record(benchmark::State& st, const Op& op, const CaseInfo& info, const RunConfig& cfg,
                     const Timing& t, int launches, Verdict* verdict) {
    RecordStep(st, op, info, cfg, t, launches, verdict);
    if (t.iterations == 0 || t.total <= 0) return;
    const Epoch* epoch = info.Extra<Epoch>();
    if (epoch == nullptr || info.batch <= 0) return;
    const double step_s = t.Mean();
    st.counters[std::string(schema::kEpochItems)] = double(epoch->items);
    st.counters[std::string(schema::kEpochS)] =
        std::ceil(double(epoch->items) / double(info.batch)) * step_s;
  }
};

// A transformer's steps: the training steps' record, and tokens_per_s (batch x seq a step) and
// mfu (the record's pct_peak: the op's flops are nanoGPT's model FLOPs, over the dtype's peak).
template <class Op>
struct TransformerSteps : TrainSteps<Op> {
  static void Record(benchmark::State& st, const Op& op, const CaseInfo& info, const RunConfig& cfg,
                     const Timing& t, int launches, Verdict* verdict) {
    TrainSteps<Op>::Record(st, op, info, cfg, t, launches, verdict);
    if (t.iterations == 0 || t.total <= 0) return;
    st.counters[std::string(schema::kTokensPerS)] = op.tokens_per_step() / t.Mean();
    auto pct = st.counters.find(std::string(schema::kPctPeak));
    if (pct != st.counters.end()) st.counters[std::string(schema::kMfu)] = double(pct->second);
  }
};

// Registers one transformer case: train/<device>/<backend>/<model>/bs:<b>/dt:<dt>/pass:train
// [/graph:<g>]/seq:<s>. The CSV's epoch is tokens; the case's epoch_items are sequences of `seq`.
template <class Op>
void AddTransformer(const Model& m, const TransformerCase& tc) {
  TrainShape shape = ShapeOf(m, tc.batch, tc.config);
  shape.seq = tc.seq;
  const RunConfig cfg = RunConfigOf(tc.config);
  NameKeys keys = KeysOf(m, tc.batch, tc.config, Op::kGpu);
  keys.push_back({key::kSeq, std::to_string(tc.seq)});
  CaseInfo info =
      CaseInfo::Of(m.basics, tc.config.amp ? DType::kBF16 : tc.config.dtype, tc.batch, nullptr);
  info.extra = Epoch{(m.epoch_items + tc.seq - 1) / tc.seq};
  Register<Op, TrainShape, TransformerSteps<Op>>("train", m.basics, std::move(keys), shape, cfg,
                                                 info);
}

// Registers one case: train/<device>/<backend>/<model>/bs:<b>/dt:<dt>[/fmt:<f>]/pass:<p>
// [/graph:<g>] (fmt only for image models, graph only on the GPU).
template <class Op>
void Add(const Model& m, int batch, const Config& c) {
  const TrainShape shape = ShapeOf(m, batch, c);
  const RunConfig cfg = RunConfigOf(c);
  NameKeys keys = KeysOf(m, batch, c, Op::kGpu);
  CaseInfo info = CaseInfo::Of(m.basics, c.amp ? DType::kBF16 : c.dtype, batch, nullptr);
  info.extra = Epoch{m.epoch_items};
  Register<Op, TrainShape, TrainSteps<Op>>("train", m.basics, std::move(keys), shape, cfg, info);
}

}  // namespace dlb::train

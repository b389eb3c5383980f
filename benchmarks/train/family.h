// The training-step family's own code: its model rows (fixtures/workloads/train_models.csv), the
// configurations each tier times, and how one case is added. Shared by bench_train (LibTorch) and
// bench_train_native (the suite's own MLP step on oneDNN and cuBLASLt): LibTorch 2.x carries a
// oneDNN of its own, so the native CPU step, which calls the system's, lives in its own binary.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "fixtures/flags.h"
#include "fixtures/harness.h"
#include "fixtures/schema/schema.h"
#include "fixtures/workloads.h"
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

// The batch sizes of the tier for a model on a device: smoke 2; full 1..512; default on the GPU
// 16..256 (16..128 at 224x224), on the CPU the batches a CPU trains with, 16, 32, 64 (16 and 32
// at 224x224; the MLP, cheap at any batch, keeps 16..256).
std::vector<int> Batches(const Model& m, bool gpu);
// Every batch size of the tier for the model on either device: the GPU's, then any other.
std::vector<int> AnyDeviceBatches(const Model& m);
bool Contains(const std::vector<int>& batches, int b);

// One configuration of a step: dtype (amp: bf16 autocast), layout, pass, graph.
struct Config {
  DType dtype = DType::kF32;
  bool amp = false;
  Layout layout = Layout::kNCHW;
  Pass pass = Pass::kTrain;
  bool graph = false;
};
// What the tier times on a device:
//   CPU  smoke/default: f32 NCHW train and infer; full: also NHWC.
//   GPU  smoke: f32 NCHW train eager and graph, amp_bf16 NHWC train graph;
//        default: {f32 NCHW, amp_bf16 NHWC} train x {eager, graph}, and infer in a graph;
//        full: {f32, tf32, amp_bf16} x {NCHW, NHWC} x {train, infer} x {eager, graph}.
std::vector<Config> Configs(bool gpu);
std::string DtName(const Config& c);  // f32 | tf32 | amp_bf16
// The run configuration of a case in configuration c: its dtype and layout, the run's seed and
// threads.
RunConfig RunConfigOf(const Config& c);
// bf16 autocast, NHWC, training: what the end-to-end and data-parallel steps run.
Config AmpNhwcTrain(bool graph);
// A model's step at `batch` in configuration `c`, and the name keys every training case starts
// with: bs, dt[, fmt (image models)], pass[, graph (GPU)].
TrainShape ShapeOf(const Model& m, int batch, const Config& c);
NameKeys KeysOf(const Model& m, int batch, const Config& c, bool gpu);

// The epoch size of a case's model, by benchmark name (filled by Add).
const std::map<std::string, int64_t>& EpochItems();
void NoteEpochItems(const std::string& name, int64_t items);

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
    auto it = EpochItems().find(info.name);
    if (it == EpochItems().end() || info.batch <= 0) return;
    const double step_s = t.Mean();
    st.counters[std::string(schema::kEpochItems)] = double(it->second);
    st.counters[std::string(schema::kEpochS)] =
        std::ceil(double(it->second) / double(info.batch)) * step_s;
  }
};

// Registers one case: train/<device>/<backend>/<model>/bs:<b>/dt:<dt>[/fmt:<f>]/pass:<p>
// [/graph:<g>] (fmt only for image models, graph only on the GPU).
template <class Op>
void Add(const Model& m, int batch, const Config& c) {
  const TrainShape shape = ShapeOf(m, batch, c);
  const RunConfig cfg = RunConfigOf(c);
  NameKeys keys = KeysOf(m, batch, c, Op::kGpu);
  NoteEpochItems(BuildName({"train", Op::kGpu ? "gpu" : "cpu", Op::kBackend, m.basics.name, keys}),
                 m.epoch_items);
  CaseInfo info = CaseInfo::Of(m.basics, c.amp ? DType::kBF16 : c.dtype, batch, nullptr);
  Register<Op, TrainShape, TrainSteps<Op>>("train", m.basics, std::move(keys), shape, cfg, info);
}

}  // namespace dlb::train

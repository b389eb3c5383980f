// train: training steps per model (epoch CPU vs GPU, batch size, phases, memory, graph, backends).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fixtures/schema/families.h"
#include "tools/report/analyses/sweep.h"
#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"

namespace dlb::report {

// ---- train: training steps, per model ----
inline constexpr std::string_view kTrainFamily = families::kTrain;
// One measured case. Counters the JSON lacks (or holds out of range) are NaN; fmt and graph are
// empty where the name has no such key (the MLP has no layout, the CPU no graph).
struct TrainCase {
  std::string name, model, device, backend, dt, fmt, pass, graph;
  std::string curve;  // the SweepCurve::curve it lies on
  double bs = 0, step_ns = 0;
  double epoch_s = 0;  // epoch_s, else epoch_items x step time / bs; NaN: neither counter
  double epoch_items = 0, fwd_s = 0, bwd_s = 0, opt_s = 0, peak_mem_bytes = 0;
  double tokens_per_s = 0;  // transformer steps: the tokens_per_s counter; NaN without it
  bool doubtful = false;    // not verified or mistrusted
  // "libtorch bs:256/dt:amp_bf16/fmt:nhwc/graph:1": the backend and the keys but pass.
  std::string Config() const;
  // The case's name keys, "bs:256/dt:f32/fmt:nchw/pass:train/graph:1": dt and fmt where set, bs,
  // pass and graph as asked.
  std::string NameKeys(bool with_bs, bool with_pass, bool with_graph) const;
};
// One epoch of a model on each device: the best training configuration of each (shortest epoch,
// any backend, dtype, layout, batch size, graph), and the same configuration on both (f32, nchw,
// eager, the fastest backend of each, at the largest batch size both ran).
struct TrainEpoch {
  std::string model;
  double epoch_items = 0;
  std::optional<TrainCase> cpu, gpu, same_cpu, same_gpu;
  double speedup = 0, same_speedup = 0;  // CPU epoch / GPU epoch; NaN without both
};
// The batch-size curve (SweepCurves' points and fit) of a device's best configuration.
struct TrainCurve {
  std::string model, device;
  TrainCase at;  // the best case, on the curve
  SweepCurve sweep;
};
// Where a step goes: fwd, bwd and opt (timed apart, un-graphed) as shares of the step, and the
// rest; of their sum instead where they add up to more than the step (a graphed step).
struct TrainPhases {
  std::string model, device;
  TrainCase at;  // the fastest training case of the device that carries all three
  double fwd = 0, bwd = 0, opt = 0, other = 0;
  bool over_step = false;
};
// Peak memory over batch size along the curve of a device's best configuration that has it.
struct TrainMemory {
  std::string model, device;
  TrainCase at;
  std::vector<std::pair<double, double>> points;  // bs, bytes
};
// Two cases that differ only in graph (a: graph:1, b: graph:0) or only in backend (a: native or
// libtorch, b: libtorch or pytorch); speedup = b's step time / a's.
struct TrainPair {
  std::string model, device;
  TrainCase a, b;
  double speedup = 0;
};
// The pairs of one model, device, pass and pair of backends (a graph pair: one backend).
struct TrainPairSummary {
  std::string model, device, pass, a, b;
  size_t n = 0;
  double geomean = 0;
  TrainPair lo, hi;  // the smallest and the largest speedup
};
struct TrainResult {
  std::vector<std::string> models;  // in first-seen order
  std::vector<TrainCase> cases;
  std::vector<TrainEpoch> epochs;
  std::vector<TrainCurve> curves;
  std::vector<TrainPhases> phases;
  std::vector<TrainMemory> memory;
  std::vector<TrainPair> graphs, backends;
  std::vector<TrainPairSummary> graph_summary, backend_summary;
  std::vector<std::string> notes;  // what was left out and why, one line per reason
};
TrainResult ComputeTrain(const MergedRuns& runs);
// The first screen (epoch CPU vs GPU; batch size, phases, memory; graph and backends), then the
// details (every pair), marked as such.
std::vector<Section> TrainSections(const TrainResult& train);
Document TrainDocument(const MergedRuns& runs, const std::vector<std::string>& inputs);

}  // namespace dlb::report

// The analyses behind the subcommands. Each has a pure computing half (merged runs in, rows out:
// numbers, verdicts, marks) and a rendering half (rows in, Document sections out), as compare.py
// splits get_difference_report from print_difference_report; Render() then writes the format.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/report/document.h"
#include "tools/report/gbench_compare.h"
#include "tools/report/gbench_json.h"

namespace dlb::report {

// ---- summary ----
struct SummaryFamily {
  std::string family;
  std::vector<std::string> counters;  // every counter of the family, the common ones first
  std::vector<const Bench*> benches;  // measured, in first-seen order
  bool verification = false;          // some bench has a known disposition
  std::vector<std::string> metrics;   // of their errors and tolerances
};
struct SummaryResult {
  std::vector<SummaryFamily> families;
  std::vector<const Bench*> not_measured;  // unsupported and failed
  size_t total = 0, measured = 0, unsupported = 0, failed = 0;
  std::map<std::string, size_t> dispositions;  // of measured benches that have one
};
SummaryResult ComputeSummary(const MergedRuns& runs);
// A table per family (median, CV, counters, verification), then unsupported and failed cases.
std::vector<Section> SummarySections(const SummaryResult& summary);
// "benchmark | label": the prose of each result, kept out of the tables; collapsed in HTML.
Section LabelSection(const MergedRuns& runs);
Document Summary(const MergedRuns& runs, const std::vector<std::string>& inputs);

// ---- the device monitor's counters ----
// Whether any repetition ran throttled (counter throttled; false where the JSON has none).
bool AnyThrottled(const Bench& b);
// Whether any repetition's timing pass stalled and was re-timed (counter stalled).
bool AnyStalled(const Bench& b);

// ---- compare ----
struct CompareOptions {
  double threshold = 0.05;    // relative change in time that matters
  double alpha = 0.05;        // significance level for the BH-adjusted p-value
  bool only_changes = false;  // rendering: tables leave out the "same" rows (short CI summaries)
};

enum class Verdict { kFaster, kSlower, kSame, kNoisy, kNew, kMissing };
const char* VerdictName(Verdict v);

struct CompareRow {
  std::string name, family;
  double base_ns = 0, new_ns = 0;
  double delta = 0;  // (new - base) / |base| of the median real times, as compare.py's median row
  double cpu_delta = 0;  // the same of the median CPU times
  double p = 0, q = 0;   // two-sided Mann-Whitney U over real_time repetitions; NaN without test
  double cpu_p = 0;      // the same over cpu_time (compare.py's second p-value)
  size_t base_reps = 0, new_reps = 0;
  Verdict verdict = Verdict::kSame;
  std::map<std::string, double> rate_deltas;      // counters ending in _per_s: (new-base)/|base|
  std::string base_disposition, new_disposition;  // empty when the side does not say
  bool doubtful = false;  // either side not verified or mistrusted: the change may not be speed
  // The device monitor's view: each side's median SM clock (NaN where not monitored), whether it
  // throttled; clock_flag when either side throttled or the clocks differ by more than
  // kClockDiffers: the change may come from the GPU's clock rather than from the code.
  double base_clock = 0, new_clock = 0;
  bool base_throttled = false, new_throttled = false, clock_flag = false;
  // The harness's timing fidelity: a side whose timing pass stalled (counter stalled) was re-timed;
  // its time may still carry the stall.
  bool base_stalled = false, new_stalled = false;
  std::string note;
};
inline constexpr double kClockDiffers = 0.05;

struct CompareResult {
  std::vector<CompareRow> rows;
  double geomean_delta = 0;  // geomean of new/base median ratios, minus 1
  size_t geomean_count = 0;
  int regressions = 0;
  int doubtful = 0;         // rows marked: either side not verified or mistrusted
  int clock_flags = 0;      // rows marked: either side throttled or the SM clocks differ
  int stalled = 0;          // rows marked: either side's timing pass stalled
  size_t not_compared = 0;  // benchmarks with a time in neither file
  int exit_code = 0;        // 0, or 3 when a row is "slower"
};
CompareResult Compare(const MergedRuns& base, const MergedRuns& now, const CompareOptions& options);
// `as_compare_py`: compare.py's own table on the same files, appended as a details section.
Document CompareDocument(const CompareResult& result, const CompareOptions& options,
                         const std::string& base_path, const std::string& new_path,
                         const std::vector<GbenchDiff>* as_compare_py = nullptr,
                         bool aggregates_only = false);

// ---- speedup ----
struct SpeedupRow {
  std::string family, pair_key, workload, dt, bs, config;
  std::string network;                   // of the CPU result, else the GPU's; empty: none
  std::string cpu_backend, gpu_backend;  // "best" rows name the winners
  bool best = false;
  double cpu_ns = 0, gpu_ns = 0, speedup = 0, lo = 0, hi = 0;
  double count = 0;  // the layer's repeat count in its network (counter "count"); 0 if absent
  bool has_interval = false;
  bool doubtful = false;  // either side not verified or mistrusted
};
// The layers of one network at one dtype, batch size and config, each weighted by its repeat
// count (as benchdnn weighs a model's layers), fastest backend of each device.
struct NetworkRow {
  std::string family, network, dt, bs, config;
  int layers = 0;
  double cpu_ns = 0, gpu_ns = 0, speedup = 0;
  bool doubtful = false;  // a layer's result was not verified or was mistrusted
};
struct SpeedupResult {
  std::vector<SpeedupRow> rows;
  std::vector<NetworkRow> networks;
};
SpeedupResult ComputeSpeedup(const MergedRuns& runs);
std::vector<SpeedupRow> SpeedupRows(const MergedRuns& runs);
std::vector<Section> SpeedupSections(const SpeedupResult& speedup);

// ---- sweep ----
struct SweepPoint {
  double bs = 0, time_ns = 0, per_sample_ns = 0, throughput = 0;  // samples/s
};
struct SweepCurve {
  std::string sweep_key;  // without device, backend and bs
  std::string curve;      // with device and backend
  std::string family, device, backend, network;
  std::vector<SweepPoint> points;  // by batch size
  double best_bs = 0, best_throughput = 0;
  bool fit_ok = false;
  double c = 0, alpha = 0, t_min = 0, r2 = 0;  // of time per sample, in ns
};
std::vector<SweepCurve> SweepCurves(const MergedRuns& runs);
// The curve over worker threads (a key "workers", as the data-loading family's): per workload,
// device, backend and every other key (bs included), throughput at each worker count, and the
// scaling efficiency against the fewest workers measured: (thr(w) / thr(w0)) / (w / w0).
struct WorkerPoint {
  double workers = 0, time_ns = 0, throughput = 0, efficiency = 0;
};
struct WorkerCurve {
  std::string key;    // without device, backend and workers
  std::string curve;  // with device and backend
  std::string device, backend;
  std::vector<WorkerPoint> points;  // by workers
  double best_workers = 0, best_throughput = 0;
};
std::vector<WorkerCurve> WorkerCurves(const MergedRuns& runs);
std::vector<Section> WorkerSections(const std::vector<WorkerCurve>& curves);

// ---- GPU scaling: cases over a name key "gpus" ----
inline constexpr std::string_view kCommFamily = "comm";

// Where an efficiency comes from: the curve's own gpus:1 point, (thr(n) / n) / thr(1); else the
// case's scaling_efficiency counter (its process timed the one-GPU step); else none.
enum class EfficiencySource { kOneGpuPoint, kCounter, kNone };
struct GpuPoint {
  std::string name;
  double gpus = 0, time_ns = 0;
  double throughput = 0;  // items/s over all GPUs
  double per_gpu = 0;     // items/s per GPU
  double efficiency = 0;  // NaN: unknown
  EfficiencySource source = EfficiencySource::kNone;
  double single_gpu = 0;      // the one-GPU step's items/s the case measured; NaN: not written
  double exposed_comm_s = 0;  // NaN: not written
  bool doubtful = false;      // not verified or mistrusted
};
// A step (any family but comm) at several GPU counts: the name without the gpus key; points may
// come from several files (runs on 2-, 4- and 8-GPU hosts).
struct GpuCurve {
  std::string curve;  // the name without the gpus key
  std::string family, device, backend, model;
  std::string config;    // the keys but bs and gpus: "dt:amp_bf16/fmt:nhwc/pass:train/graph:1"
  double bs = 0;         // per GPU; 0: no bs key
  bool one_gpu = false;  // the curve has a gpus:1 point
  std::vector<GpuPoint> points;  // by gpus
};
// A collective at one size on several GPU counts: bus and algorithm bandwidth per count.
struct CollectivePoint {
  double bytes = 0;
  std::map<double, double> busbw, algbw;  // gpus -> bytes/s; NaN: not written
  std::map<double, bool> doubtful;        // gpus -> not verified or mistrusted
};
// Per collective, dtype and every other key but gpus (inplace:1 apart from out of place).
struct CollectiveCurve {
  std::string key;  // "comm/gpu/nccl/all_reduce/dt:bf16/inplace:1"
  std::string collective, config;
  std::vector<double> gpus;             // every count measured, ascending
  std::vector<CollectivePoint> points;  // by bytes
};
struct GpuScaling {
  std::vector<GpuCurve> steps;
  std::vector<CollectiveCurve> collectives;
  bool empty() const { return steps.empty() && collectives.empty(); }
};
GpuScaling ComputeGpuScaling(const MergedRuns& runs);
// The summary (model, per-GPU batch, efficiency at each GPU count, exposed communication), a
// table and a chart per step curve, then per collective busbw (and algbw) over size per count.
std::vector<Section> GpuScalingSections(const GpuScaling& scaling);
// The same for the full report: the summary stays on the first screen, the rest (and a summary of
// collectives alone) goes into one collapsed section; nothing when there is no gpus key.
std::vector<Section> GpuScalingReportSections(const GpuScaling& scaling);

// The fits table, then per sweep key its points and charts, for curves of at least `min_points`
// batch sizes (two points draw a line that says nothing the overview's table does not).
std::vector<Section> SweepSections(const std::vector<SweepCurve>& curves, size_t min_points = 2);

// ---- the first screen of the report ----
// One network (or one workload that belongs to none) at one dtype, config and batch size:
// CPU and GPU time (fastest backend of each, layers weighted by their count), speedup,
// throughput, and whether this batch size is the device's best.
struct OverviewRow {
  std::string family, subject;  // subject: the network, else the workload
  bool network = false;
  std::string dt, config;
  double bs = 0;  // 0: the workload has no batch size
  int cpu_layers = 0, gpu_layers = 0;
  double cpu_ns = 0, gpu_ns = 0, speedup = 0;  // NaN where a device has nothing
  double cpu_per_s = 0, gpu_per_s = 0;         // samples/s; NaN without a batch size
  bool cpu_best = false, gpu_best = false;     // highest samples/s over bs, per device
  bool doubtful = false;  // a result it adds up was not verified or was mistrusted
};
struct Overview {
  std::vector<std::string> families;  // in first-seen order
  std::vector<OverviewRow> rows;      // by family, subject, dt, config, bs
};
Overview ComputeOverview(const MergedRuns& runs);
// Per family: a short table per network (and one for workloads without a network), speedup bars
// at each row's best GPU batch size, throughput-over-batch-size curves per network.
std::vector<Section> OverviewSections(const Overview& overview);

// ---- train: training steps, per model ----
inline constexpr std::string_view kTrainFamily = "train";
// One measured case. Counters the JSON lacks (or holds out of range) are NaN; fmt and graph are
// empty where the name has no such key (the MLP has no layout, the CPU no graph).
struct TrainCase {
  std::string name, model, device, backend, dt, fmt, pass, graph;
  std::string curve;  // the SweepCurve::curve it lies on
  double bs = 0, step_ns = 0;
  double epoch_s = 0;  // epoch_s, else epoch_items x step time / bs; NaN: neither counter
  double epoch_items = 0, fwd_s = 0, bwd_s = 0, opt_s = 0, peak_mem_bytes = 0;
  bool doubtful = false;  // not verified or mistrusted
  // "libtorch bs:256/dt:amp_bf16/fmt:nhwc/graph:1": the backend and the keys but pass.
  std::string Config() const;
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

Document SpeedupDocument(const MergedRuns& runs, const std::vector<std::string>& inputs);
// axis "bs" (batch-size curves and fits), "workers" (worker-thread scaling) or "gpus" (multi-GPU
// training steps and collectives over the GPU count).
Document SweepDocument(const MergedRuns& runs, const std::vector<std::string>& inputs,
                       const std::string& axis = "bs");
// What the README's main job writes: the overview first (train results: the train sections in
// place of the family's overview), then (collapsed in HTML) the summary, speedup, sweep and train
// details, labels last.
Document FullReport(const MergedRuns& runs, const std::vector<std::string>& inputs);

// "host, CPU, GPU, date, revision" line from the context, for the notes.
std::string ContextLine(const std::map<std::string, std::string>& context);

}  // namespace dlb::report

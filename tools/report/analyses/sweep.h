// sweep: the curves over batch size (with the fit of the time per sample) and over worker threads;
// `--axis gpus` is gpu_scaling.h's.
#pragma once

#include <string>
#include <vector>

#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"

namespace dlb::report {

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

// The fits table, then per sweep key its points and charts, for curves of at least `min_points`
// batch sizes (two points draw a line that says nothing the overview's table does not).
std::vector<Section> SweepSections(const std::vector<SweepCurve>& curves, size_t min_points = 2);

// axis "bs" (batch-size curves and fits), "workers" (worker-thread scaling) or "gpus" (multi-GPU
// training steps and collectives over the GPU count).
Document SweepDocument(const MergedRuns& runs, const std::vector<std::string>& inputs,
                       const std::string& axis = key::kBatch);

}  // namespace dlb::report

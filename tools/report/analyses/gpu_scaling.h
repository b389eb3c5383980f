// sweep --axis gpus: multi-GPU steps and collectives over the GPU count.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"

namespace dlb::report {

// ---- GPU scaling: cases over a name key "gpus" ----
// Whether `family` times collectives (bus bandwidth over message sizes, no CPU twin).
bool Collectives(std::string_view family);

// Where an efficiency comes from: the curve's own gpus:1 point, (thr(n) / n) / thr(1); else the
// same against the matching one-GPU step (the name without a gpus key); else the case's
// scaling_efficiency counter (its process timed the one-GPU step); else none.
enum class EfficiencySource { kOneGpuPoint, kOneGpuStep, kCounter, kNone };
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
// come from several files (runs on 2-, 4- and 8-GPU hosts). A one-GPU step without a gpus key
// makes no curve of its own; it is a curve's 1-GPU point where the curve has no gpus:1 point.
struct GpuCurve {
  std::string curve;  // the name without the gpus key
  std::string family, device, backend, model;
  std::string config;    // the keys but bs and gpus: "dt:amp_bf16/fmt:nhwc/pass:train/graph:1"
  double bs = 0;         // per GPU; 0: no bs key
  bool one_gpu = false;  // the curve has a 1-GPU point: its own gpus:1, else the one-GPU step
  // The one-GPU step taken as the 1-GPU point (same family, device, backend, workload and every key
  // but gpus, no gpus key: the run's ordinary step); empty when the curve has its own gpus:1 point
  // or no such step was given.
  std::string one_gpu_step;
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

}  // namespace dlb::report

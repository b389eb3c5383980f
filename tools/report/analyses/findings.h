// The report's findings: what a person reads first (per model the epoch on each device and the
// speedup, the best batch size, loader starvation, GPU scaling, the best of each family, and the
// throughput cliffs), before any family's table.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "tools/report/analyses/gpu_scaling.h"
#include "tools/report/analyses/peaks.h"
#include "tools/report/analyses/train.h"
#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"

namespace dlb::report {

// Which devices measured anything, and what the context says about the GPU (its name, or why
// there is none: "none: no CUDA device", "not built (no CUDA)").
struct Devices {
  bool cpu = false, gpu = false;
  std::string gpu_context;
};
Devices DevicesOf(const MergedRuns& runs);
// "CPU only: no GPU in this run (why)." / "GPU only: no CPU case in this run."; empty when both
// devices measured something, or neither.
std::string DevicesLine(const Devices& d);

// A throughput drop of more than `factor` between neighbouring batch sizes of one curve (a case
// name apart from bs, on one device and backend). For a training step with fwd_s, bwd_s and opt_s
// at both sizes, the phase whose seconds per item (the counter, which is per step, over bs) grew
// the most between them.
struct Cliff {
  std::string family, curve;  // curve: the name with bs left out, device and backend kept
  std::string from_name, to_name;
  double bs_from = 0, bs_to = 0;
  double thr_from = 0, thr_to = 0;  // items/s: bs / median time
  std::string phase;                // the schema's kFwdS, kBwdS or kOptS; empty: no phases at both
  double phase_from = 0, phase_to = 0;  // that phase's seconds per item
};
inline constexpr double kCliffFactor = 2;
std::vector<Cliff> FindCliffs(const MergedRuns& runs, double factor = kCliffFactor);

// A training step fed by a data loader (a name with a loader key): per model, batch size, loader
// and configuration, the worker count with the least starvation, and the starvation at the fewest
// workers where there are several.
struct FedStep {
  std::string model, loader, config;  // config: dt, fmt, pass, graph
  double bs = 0, workers = 0;         // workers: 0 where the name has none
  double fed = 0, alone = 0, starvation = 0;
  double fewest_workers = 0, fewest_starvation = 0;  // equal to workers, starvation: one count
  size_t counts = 0;                                 // worker counts measured
};
std::vector<FedStep> FedSteps(const MergedRuns& runs);

// The findings section: the devices line, then a table per question that has an answer here;
// `networks` (the report's NetworkFindings) goes after the training tables where it has rows.
Section FindingsSection(const MergedRuns& runs, const TrainResult& train, const GpuScaling& scaling,
                        Table networks = {});

}  // namespace dlb::report

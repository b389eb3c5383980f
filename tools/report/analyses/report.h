// report: the first screen (per network CPU and GPU time, speedup, samples/s over batch size), then
// every other subcommand's sections as the details.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"

namespace dlb::report {

// ---- the first screen of the report ----
// One network (or one workload that belongs to none) at one dtype, config and batch size:
// CPU and GPU time (fastest backend of each, layers weighted by their count), speedup,
// throughput, and whether this batch size is the device's best.
struct OverviewRow {
  std::string family, subject;  // subject: the network, else the workload
  bool network = false;
  std::string dt, config;
  // dt and the config's keys as the name orders them, for a column per key that varies.
  std::vector<std::pair<std::string, std::string>> keys;
  double bs = 0;  // 0: the workload has no batch size
  int cpu_layers = 0, gpu_layers = 0;
  double cpu_ns = 0, gpu_ns = 0, speedup = 0;  // NaN where a device has nothing
  // The backends whose times those are, the fastest of each layer ("cudnn", "cudnn, libtorch");
  // empty where a device has nothing.
  std::string cpu_backend, gpu_backend;
  double cpu_per_s = 0, gpu_per_s = 0;  // items/s; NaN without a batch size
  // What those rates count, in the subject's own item: "images/s", "sequences/s", "samples/s".
  std::string per_s_unit;
  double cpu_flop_per_s = 0, gpu_flop_per_s = 0;  // NaN unless every layer counts its FLOP
  // The share of the peak (or roof) its FLOP/s reach, % (PeakShareOf each layer, weighted by its
  // time: the time it would take at the peak over the time it takes); NaN unless every layer
  // has one. The peak named: "spec bf16 1.07 PFLOP/s at max clock"; empty: no peak known.
  double cpu_pct_peak = 0, gpu_pct_peak = 0;
  std::string cpu_peak, gpu_peak;
  double busbw = 0, algbw = 0;  // bytes/s of a collective (one case on the GPU); NaN otherwise
  bool cpu_best = false, gpu_best = false;  // highest samples/s over bs, per device
  // A case it adds up spread more than kNoisyCv over its repetitions: its rate says so.
  bool cpu_noisy = false, gpu_noisy = false;
  bool doubtful = false;  // a result it adds up was not verified or was mistrusted
};
struct Overview {
  std::vector<std::string> families;  // in first-seen order
  std::vector<OverviewRow> rows;      // by family, subject, dt, config, bs
};
Overview ComputeOverview(const MergedRuns& runs);
// Whether a family's cases stand by workload, never added up into a network: a data-loading
// pipeline reads a dataset (its network field) but two pipelines are no sum, nor are two
// collectives, nor the attention of one model at several sequence lengths.
bool OverviewByWorkload(const std::string& family);
// Per family: a short table per network (and one for workloads without a network), speedup bars
// at each row's best GPU batch size, throughput-over-batch-size curves per network.
std::vector<Section> OverviewSections(const Overview& overview);

// A row's % of peak on a device ("20.4%", "⚠ 103%") and the peak named; "-" and "no peak known"
// where none is known; "-" and "-" without a row.
std::pair<Cell, Cell> PeakCells(const OverviewRow* r, bool gpu);

// For the findings: per network of layers (conv, GEMM; train has its epochs) the speedup at the
// GPU's best batch size over its dtypes and configs, and each device's best batch size.
Table NetworkFindings(const Overview& overview);

// What the README's main job writes: the overview first (train results: the train sections in
// place of the family's overview), then (collapsed in HTML) the summary, speedup, sweep and train
// details, labels last.
// `contexts`: each input file's context, for the Problems section's mixed inputs (empty: none
// looked for).
Document FullReport(const MergedRuns& runs, const std::vector<std::string>& inputs,
                    const std::vector<std::map<std::string, std::string>>& contexts = {});

}  // namespace dlb::report

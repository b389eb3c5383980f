// The analyses behind the subcommands: pure functions from merged runs to a Document.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tools/report/document.h"
#include "tools/report/gbench_json.h"

namespace dlb::report {

// ---- summary ----
Document Summary(const MergedRuns& runs, const std::vector<std::string>& inputs);
// The sections only (for the combined report).
std::vector<Section> SummarySections(const MergedRuns& runs);

// ---- compare ----
struct CompareOptions {
  double threshold = 0.05;    // relative change in time that matters
  double alpha = 0.05;        // significance level for the BH-adjusted p-value
  bool only_changes = false;  // tables leave out the "same" rows (short CI job summaries)
};

enum class Verdict { kFaster, kSlower, kSame, kNoisy, kNew, kMissing };
const char* VerdictName(Verdict v);

struct CompareRow {
  std::string name, family;
  double base_ns = 0, new_ns = 0;
  double delta = 0;     // (new - base) / |base| of the median times, as compare.py's median row
  double p = 0, q = 0;  // two-sided Mann-Whitney U over real_time repetitions; NaN without test
  size_t base_reps = 0, new_reps = 0;
  Verdict verdict = Verdict::kSame;
  std::map<std::string, double> rate_deltas;  // counters ending in _per_s: (new-base)/|base|
  std::string note;
};

struct CompareResult {
  std::vector<CompareRow> rows;
  double geomean_delta = 0;  // geomean of new/base median ratios, minus 1
  size_t geomean_count = 0;
  int regressions = 0;
  int exit_code = 0;  // 0, or 3 when a row is "slower"
  Document doc;
};
CompareResult Compare(const MergedRuns& base, const MergedRuns& now, const std::string& base_path,
                      const std::string& new_path, const CompareOptions& options);

// ---- speedup ----
struct SpeedupRow {
  std::string family, pair_key, workload, dt, bs, config;
  std::string cpu_backend, gpu_backend;  // "best" rows name the winners
  bool best = false;
  double cpu_ns = 0, gpu_ns = 0, speedup = 0, lo = 0, hi = 0;
  double count = 0;  // the layer's repeat count in its network (counter "count"); 0 if absent
  bool has_interval = false;
};
std::vector<SpeedupRow> SpeedupRows(const MergedRuns& runs);
std::vector<Section> SpeedupSections(const MergedRuns& runs);

// ---- sweep ----
struct SweepPoint {
  double bs = 0, time_ns = 0, per_sample_ns = 0, throughput = 0;  // samples/s
};
struct SweepCurve {
  std::string sweep_key;  // without device, backend and bs
  std::string curve;      // with device and backend
  std::string family, device, backend;
  std::vector<SweepPoint> points;  // by batch size
  double best_bs = 0, best_throughput = 0;
  bool fit_ok = false;
  double c = 0, alpha = 0, t_min = 0, r2 = 0;  // of time per sample, in ns
};
std::vector<SweepCurve> SweepCurves(const MergedRuns& runs);
std::vector<Section> SweepSections(const MergedRuns& runs);

Document SpeedupDocument(const MergedRuns& runs, const std::vector<std::string>& inputs);
Document SweepDocument(const MergedRuns& runs, const std::vector<std::string>& inputs);
// summary + speedup + sweep in one document: what the README's main job writes.
Document FullReport(const MergedRuns& runs, const std::vector<std::string>& inputs);

// "host, CPU, date" line from the context, for the notes.
std::string ContextLine(const std::map<std::string, std::string>& context);

}  // namespace dlb::report

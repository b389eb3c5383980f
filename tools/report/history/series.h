// A machine's history as series a detector may read: every run of the machine (oldest first) with
// its context, and per case its run medians split by build — the tier and the library versions
// and build type the run's context names — so that runs of another tier or library build are
// never one series. history check and the site read the history through this.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tools/report/history/changepoints.h"
#include "tools/report/history/store.h"
#include "tools/report/history/tables.h"
#include "tools/report/render/document.h"

namespace dlb::report::history {

struct RunInfo {
  RunRow row;
  std::map<std::string, std::string> context;  // the string values of the run's context
  std::string build;                           // BuildKey(context)
};

// "tier smoke, Release, oneDNN 2.6.0, cuDNN 9.14.0, ...": the context's tier, build type and
// library versions (oneDNN, CUDA runtime, cuBLAS, cuDNN, LibTorch, TurboJPEG, NCCL), those it has.
// The driver and the clocks are not in it: a change point that lines up with a driver upgrade is
// what the site shows, not a reason to split.
std::string BuildKey(const std::map<std::string, std::string>& context);

// The machines of the store, sorted.
std::vector<std::string> Machines(Store& db);
// The newest `n` runs of `machine` (n <= 0: all), oldest first, with their contexts.
std::vector<RunInfo> MachineRuns(Store& db, const std::string& machine, int n);

struct Point {
  size_t run = 0;  // index into the runs read
  double median_ns = 0, cv = 0;
  int64_t reps = 0;
};

struct CaseSeries {
  std::string name, family, build;
  std::vector<Point> points;  // the runs of this build that measured the case, oldest first
  std::vector<double> Medians() const;
};

// Every case's series over `runs`, by name then by the build's first run. Unmeasured results
// (skipped, failed) are left out of the series.
std::vector<CaseSeries> ReadSeries(Store& db, const std::vector<RunInfo>& runs);

// A case's kernel tables (as stored JSON) per run index of `runs`, where the store keeps them.
class KernelTables {
 public:
  KernelTables(Store& db, const std::vector<RunInfo>& runs);
  std::map<size_t, std::string> Of(const std::string& name);

 private:
  std::unique_ptr<Query> q_;
  std::unordered_map<int64_t, size_t> col_;
};

// The kernel diff across a change point: the last run before it and the first after it that
// recorded a kernel table (`tables`: KernelTables::Of of the case). Without one on each side, the
// summary says why and there is no table.
struct KernelsAcross {
  std::string summary;
  std::optional<Table> table;
};
KernelsAcross KernelDiffAcross(const CaseSeries& s, const ChangePoint& c,
                               const std::map<size_t, std::string>& tables);

}  // namespace dlb::report::history

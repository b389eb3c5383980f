// A machine's history on one branch as series a detector may read: the runs (oldest first) with
// their contexts, and per case its run medians split by build — the tier and build type of the
// context of the file that measured the case — so that runs of another tier or build are never one
// series. Each point keeps its file's context: a change of the case's own libraries, driver or
// measuring flags stays inside the series and is named where it meets a change point
// (environment.h). history check and the site read the history through this.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tools/report/analyses/changepoints.h"
#include "tools/report/history/store.h"
#include "tools/report/history/tables.h"
#include "tools/report/render/document.h"

namespace dlb::report::history {

struct RunInfo {
  RunRow row;
  std::map<std::string, std::string> context;  // the run's (its first file's) context
};

// "tier smoke, Release": the context's tier and build type, those it has. Library versions, the
// driver and the clocks are not in it: a change point that lines up with one of them is named as
// an environment change (environment.h), not a reason to split.
std::string BuildKey(const std::map<std::string, std::string>& context);

// The machines of the store, sorted.
std::vector<std::string> Machines(Store& db);
// The newest `n` runs that `filter` selects (n <= 0: all), oldest first, with their contexts.
std::vector<RunInfo> FilteredRuns(Store& db, const RunFilter& filter, int n);

struct Point {
  size_t run = 0;  // index into the runs read
  double median_ns = 0, cv = 0;
  int64_t reps = 0;
  // The context of the file that measured it (its run's for a result stored before version 4).
  std::shared_ptr<const std::map<std::string, std::string>> context;
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

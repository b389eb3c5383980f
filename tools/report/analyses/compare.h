// compare: BASE against NEW per benchmark, as compare.py's get_difference_report (computing) and
// print_difference_report (rendering) split the work.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tools/report/analyses/gbench_compare.h"
#include "tools/report/analyses/kernel_diff.h"
#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"

namespace dlb::report {

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
  // A change measured with fewer repetitions than this on either side is unconfirmed: marked, and
  // no regression for the exit code (--min-repetitions; 1 judges single repetitions too).
  int min_repetitions = 2;
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
  size_t base_behind = 0, new_behind = 0;  // repetitions behind each side (aggregates included)
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
  // Slower or faster on fewer than min_repetitions repetitions a side: not counted as a regression.
  bool unconfirmed = false;
  std::string note;
  // A flagged row (slower or faster): the command that re-runs the case alone (analyses/repro.h;
  // empty when new's context names no binary), and which kernels changed where both sides have a
  // kernel table (kernels_note says why not where one side has none or a malformed one).
  std::string repro;
  std::optional<KernelDiff> kernels;
  std::string kernels_note;
};
inline constexpr double kClockDiffers = 0.05;
// Whether compare flags the row: a significant change beyond the threshold either way.
inline bool Flagged(const CompareRow& row) {
  return row.verdict == Verdict::kSlower || row.verdict == Verdict::kFaster;
}

struct CompareResult {
  std::vector<CompareRow> rows;
  double geomean_delta = 0;  // geomean of new/base median ratios, minus 1
  size_t geomean_count = 0;
  int regressions = 0;
  int doubtful = 0;              // rows marked: either side not verified or mistrusted
  int clock_flags = 0;           // rows marked: either side throttled or the SM clocks differ
  int stalled = 0;               // rows marked: either side's timing pass stalled
  int kernel_diffs = 0;          // flagged rows with a kernel diff
  int flagged = 0;               // rows slower or faster
  int unconfirmed = 0;           // of those, on too few repetitions to count (min_repetitions)
  size_t common = 0;             // benchmarks measured on both sides
  std::string kernels_recorded;  // new's context dlbench_kernels (on / off); empty: not said
  size_t not_compared = 0;       // benchmarks with a time in neither file
  int exit_code = 0;             // 0, or 3 when a row is "slower" and confirmed
  // Where the sides loaded other library builds, the note that says which (analyses/libraries.h).
  std::string libraries;
  // Where the sides ran with other flags or settings, the note that names each (SetupNote).
  std::string settings;
};
CompareResult Compare(const MergedRuns& base, const MergedRuns& now, const CompareOptions& options);
// `as_compare_py`: compare.py's own table on the same files, appended as a details section.
Document CompareDocument(const CompareResult& result, const CompareOptions& options,
                         const std::string& base_path, const std::string& new_path,
                         const std::vector<GbenchDiff>* as_compare_py = nullptr,
                         bool aggregates_only = false);

}  // namespace dlb::report

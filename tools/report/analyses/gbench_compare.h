// Google Benchmark's compare.py (tools/gbench/report.py and util.py), function for function: the
// same partitions by name, pairs of runs, U tests and geomean, on the same JSON. It is what
// `compare --as-compare-py` prints, and the golden tests hold it to report.py's own expectations.
// Computing (DifferenceReport) and rendering (DifferenceSection) are apart, as in report.py.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"

namespace dlb::report {

// compare.py's UTEST_MIN_REPETITIONS and UTEST_OPTIMAL_REPETITIONS.
inline constexpr size_t kUTestMinRepetitions = 2;
inline constexpr size_t kUTestOptimalRepetitions = 9;

// One pair of runs: the i-th entry of a name in each file, in the entry's own time unit.
struct GbenchMeasurement {
  double real_time = 0, cpu_time = 0, real_time_other = 0, cpu_time_other = 0;
  double time = 0, cpu = 0;  // calculate_change of the real and of the CPU time
};

struct GbenchUTest {
  bool have_optimal_repetitions = false;
  double cpu_pvalue = 0, time_pvalue = 0;
  size_t repetitions = 0, repetitions_other = 0;
};

// One element of get_difference_report's list.
struct GbenchDiff {
  std::string name, label, time_unit;
  RunType run_type = RunType::kAbsent;  // of the base's first entry of that name
  std::string aggregate_name;           // empty unless run_type is aggregate and it names one
  std::vector<GbenchMeasurement> measurements;
  std::optional<GbenchUTest> utest;
};

// The name get_difference_report gives its geomean row.
inline constexpr const char* kOverallGeomean = "OVERALL_GEOMEAN";

// util.sort_benchmark_results: stable, by family_index, per_family_instance_index, runs before
// aggregates, repetition_index (absent ones count as -1). compare.py sorts both files so.
std::vector<Entry> SortLikeComparePy(std::vector<Entry> entries);

// report.get_difference_report(base, new, utest): for each name in both files (base's order),
// the entries with the time unit of the base's first comparable one; changes per pair of runs;
// the U test over all of them when every side has at least 2; then OVERALL_GEOMEAN, the change
// of the geometric means of all non-aggregate times of each file, when neither is zero.
// Entries without time_unit, real_time and cpu_time are left out (compare.py fails on them).
std::vector<GbenchDiff> DifferenceReport(const std::vector<Entry>& base,
                                         const std::vector<Entry>& now, bool utest = true);

// print_difference_report as a table: Benchmark, Time, CPU (changes as fractions, +0.1000 is 10%
// slower), the four times, and a "<name>_pvalue" row after each U test. `aggregates_only` shows
// only aggregate rows (compare.py -a), U test rows stay.
Section DifferenceSection(const std::vector<GbenchDiff>& diff, bool aggregates_only, double alpha);

}  // namespace dlb::report

// The report's first section, Problems: what a reader must know before trusting a figure, and only
// what applies. Throttled GPU cases (the clock against its maximum, the reasons, how many cases),
// values above 100% of a peak or roof (and why: operands in L2, a clock above the peak's, an engine
// that does fewer FLOPs than counted, a multi-GPU aggregate; or that none explains them), cases
// the harness's timing made slower than a plain loop of the same calls, failed, mistrusted and
// unverified cases by name, figures measured once, cases measured under several setups, and inputs
// mixed across dates, revisions, hosts, tiers or library versions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"

namespace dlb::report {

struct ProblemsFound {
  // Throttled: cases with the counter throttled in any repetition, of the cases with a monitor.
  int throttled = 0, monitored = 0;
  std::vector<std::string> throttle_reasons;            // as the labels name them ("sw_power_cap")
  double clock_low = 0, clock_high = 0, clock_max = 0;  // median SM clocks of the throttled; max
  // Values of pct_peak / pct_roofline above 100.
  int over_100 = 0;
  int over_100_l2 = 0;  // of the values above 100%, those of cases whose operands fit in L2
  // Of them, the pct_roofline values of GPU cases not memory-bound whose median SM clock is above
  // the one their dtype's measured peak was timed at (their file's gpu_peak_measured); the case's
  // and the peak's clock (MHz) of the widest such gap.
  // Only where the clock's ratio covers the excess: a clock cannot explain 168% of a peak.
  int over_100_clock = 0;
  double over_100_clock_case = 0, over_100_clock_peak = 0;
  // Of them, convolutions whose engine (FFT, Winograd: FewerFlopsEngine) does fewer FLOPs than
  // the direct count the rate is computed from.
  int over_100_engine = 0;
  std::vector<std::string> over_100_engines;  // the engines named, sorted
  // Of them, multi-GPU cases whose rate is the GPUs' aggregate set against one GPU's peak
  // (AggregateOverOneGpu).
  int over_100_aggregate = 0;
  // Of them, the values none of the reasons above explains.
  int over_100_unexplained = 0;
  double over_100_max = 0;
  std::string over_100_case, over_100_counter;
  // Cases timed more than kHarnessOverhead slower than a plain loop of the same calls (counter
  // vs_plain_loop: the collectives), the worst first, and the worst ratio.
  std::vector<std::string> overhead;
  double overhead_max = 0;
  std::vector<std::string> failed;      // case names
  std::vector<std::string> mistrusted;  // passed their check, timed above 105% of peak
  std::vector<std::string> unverified;  // not checked (not_verified, or a disposition unknown)
  int measured = 0, once = 0;           // measured cases; of them, measured once
  // Context values that differ between the input files (MixedInputs).
  std::map<std::string, std::vector<std::string>> mixed;
  // Cases measured under several setups, each its own row (MergedRuns::split_setups), and what
  // set them apart.
  std::map<std::string, std::vector<std::string>> setups;
  std::vector<std::string> setup_whats;

  // What in the files' contexts makes times less trustworthy (TimingHazards).
  std::vector<std::string> hazards;

  bool any() const {
    return throttled > 0 || over_100 > 0 || !overhead.empty() || !failed.empty() ||
           !mistrusted.empty() || !unverified.empty() || once > 0 || !mixed.empty() ||
           !setups.empty() || !hazards.empty();
  }
};

// A case's time over a plain loop of the same calls above this is the harness's cost, not the
// library's: the spans hold something the library does not (1.18 for a 16 MiB broadcast on 4 GPUs
// when its spans were 1 ms; 0.9-1.1 is the spread of a sound harness).
inline constexpr double kHarnessOverhead = 1.10;

// The context values that differ between the input files (`contexts`, one per file): what they
// are ("hosts", "CPU models", "CPU counts", "GPUs", "dates", "revisions", "tiers", drivers and
// library versions) -> the distinct values, sorted; a date counts by its day. Empty for one file.
std::map<std::string, std::vector<std::string>> MixedInputs(
    const std::vector<std::map<std::string, std::string>>& contexts);

// What each file's context says makes its times less trustworthy, one phrase per hazard with the
// files it applies to: Google Benchmark built as debug (library_build_type), CPU frequency scaling
// enabled (cpu_scaling_enabled, Google Benchmark's reading of the governor), dlbench itself built
// without optimisation (dlbench_build_type Debug). Empty when none applies.
std::vector<std::string> TimingHazards(
    const std::vector<std::map<std::string, std::string>>& contexts);

// "3 hosts (a, b, c)": how many values of a mixed input (MixedInputs), the first four named.
std::string SpreadText(const std::string& what, const std::vector<std::string>& values);

// `contexts`: each input file's context (empty: the runs' merged context only, no mix to find).
ProblemsFound FindProblems(const MergedRuns& runs,
                           const std::vector<std::map<std::string, std::string>>& contexts);

// The section ("Problems"), or nullopt when nothing applies.
std::optional<Section> ProblemsSection(const ProblemsFound& p);

}  // namespace dlb::report

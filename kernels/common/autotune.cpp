#include "kernels/common/autotune.h"

#include <algorithm>
#include <chrono>
#include <limits>

namespace dlb::autotune {

double SteadyMs() {
  using Ms = std::chrono::duration<double, std::milli>;
  return Ms(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace detail {

namespace {

// A batch sized to `budget_ms` for runs of `per_run_ms` each. The floor keeps a run reported as
// taking no time (below the clock's resolution) from asking for an unbounded batch.
int BatchRuns(double budget_ms, double per_run_ms, int min_runs, int max_runs) {
  constexpr double kShortestRunMs = 1e-3;
  const double runs = budget_ms / std::max(per_run_ms, kShortestRunMs);
  return int(std::clamp(runs, double(min_runs), double(std::max(min_runs, max_runs))));
}

}  // namespace

Outcome Measure(const Policy& p, double best, const RunFn& run) {
  for (int i = 0; i < p.warmup_runs; ++i) {
    const Sample s = run(1);
    if (i == 0 && p.first_launch_drop > 0 && s.host_ms <= p.first_launch_max_host_ms &&
        s.ms - s.host_ms > p.first_launch_drop * best)
      return {s.ms, true};
  }
  if (p.score == Policy::Score::kMeanOfBatch) {
    int runs = p.min_runs;
    if (p.budget_ms > 0) {
      const double probe = run(1).ms;
      if (p.drop_ratio > 0 && probe > p.drop_ratio * best) return {probe, true};
      runs = BatchRuns(p.budget_ms, probe, p.min_runs, p.max_runs);
    }
    return {run(std::max(runs, 1)).ms, false};
  }
  double fastest = std::numeric_limits<double>::infinity(), spent = 0;
  for (int n = 1;; ++n) {
    const double ms = run(1).ms;
    fastest = std::min(fastest, ms);
    spent += ms;
    if (p.drop_ratio > 0 && fastest > p.drop_ratio * best) return {fastest, true};
    if (n >= p.max_runs || (n >= p.min_runs && spent >= p.budget_ms)) return {fastest, false};
  }
}

double Retime(const Policy& p, double ms, const RunFn& run) {
  const int runs = BatchRuns(p.retime_budget_ms, ms, p.retime_min_runs, p.retime_max_runs);
  return std::min(ms, run(std::max(runs, 1)).ms);
}

std::string AllFailed(int offered, const std::vector<std::string>& failures) {
  constexpr size_t kNamed = 4;  // the rest are most likely the same error again
  const int failed = int(failures.size());
  std::string out = "autotune: " +
                    (failed == offered ? "all " + std::to_string(offered) + " candidates failed: "
                                       : std::to_string(failed) + " of " + std::to_string(offered) +
                                             " candidates failed, the fastest among them: ");
  for (size_t i = 0; i < failures.size() && i < kNamed; ++i) out += (i ? "; " : "") + failures[i];
  if (failures.size() > kNamed)
    out += "; and " + std::to_string(failures.size() - kNamed) + " more";
  return out;
}

}  // namespace detail
}  // namespace dlb::autotune

#include "tools/report/analyses/gate.h"

#include <algorithm>
#include <cmath>

#include "tools/report/analyses/stats.h"

namespace dlb::report {

const char* RunVerdictName(RunVerdict v) {
  switch (v) {
    case RunVerdict::kNew:
      return "new";
    case RunVerdict::kShortHistory:
      return "short history";
    case RunVerdict::kSame:
      return "same";
    case RunVerdict::kFaster:
      return "faster";
    case RunVerdict::kUnconfirmed:
      return "unconfirmed";
    case RunVerdict::kSlower:
      return "slower";
  }
  return "?";
}

double RunNoise(const std::vector<double>& v) {
  std::vector<double> d;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > 0 && v[i - 1] > 0) d.push_back(std::fabs(std::log(v[i] / v[i - 1])));
  return d.empty() ? NAN : 1.4826 * Median(std::move(d)) / std::sqrt(2.0);
}

RunJudgement JudgeNewest(const std::vector<double>& medians, const GateOptions& o) {
  RunJudgement j;
  j.median = j.noise = j.change = j.z = NAN;
  const size_t n = medians.size();
  j.newest = n ? medians.back() : NAN;
  const size_t hold = std::min(static_cast<size_t>(std::max(o.hold, 1)), n);
  const size_t end = n - hold;  // the judged runs begin here
  std::vector<double> before;   // every finite value before them, oldest first
  for (size_t i = 0; i < end; ++i)
    if (std::isfinite(medians[i])) before.push_back(medians[i]);
  const size_t window = std::min(static_cast<size_t>(std::max(o.window, 0)), end);
  for (size_t i = end - window; i < end; ++i) j.history += std::isfinite(medians[i]);
  if (j.history == 0) return j;
  if (static_cast<int>(j.history) < o.min_history) {
    j.verdict = RunVerdict::kShortHistory;
    return j;
  }
  j.median = Median(
      std::vector<double>(before.end() - static_cast<std::ptrdiff_t>(j.history), before.end()));
  j.noise = RunNoise(before);
  auto z = [&](double x) {
    const double r = std::log(x / j.median);
    return j.noise > 0 ? r / j.noise : r == 0 ? 0 : r > 0 ? INFINITY : -INFINITY;
  };
  // Beyond the threshold and k times the noise, either way: +1 slower, -1 faster, 0 neither.
  auto direction = [&](double x) {
    if (!std::isfinite(x) || x <= 0) return 0;
    const double ch = RelativeChange(j.median, x);
    if (std::fabs(ch) < o.threshold || std::fabs(z(x)) <= o.k) return 0;
    return ch > 0 ? 1 : -1;
  };
  j.change = RelativeChange(j.median, j.newest);
  j.z = z(j.newest);
  const int newest = direction(j.newest);
  if (newest == 0) {
    j.verdict = RunVerdict::kSame;
  } else if (newest < 0) {
    j.verdict = RunVerdict::kFaster;
  } else {
    for (size_t i = n; i-- > end && direction(medians[i]) > 0;) ++j.held;
    j.verdict = j.held >= static_cast<int>(hold) ? RunVerdict::kSlower : RunVerdict::kUnconfirmed;
  }
  return j;
}

std::vector<RerunJudgement> JudgeReruns(const std::vector<RerunSample>& samples, double threshold,
                                        double alpha) {
  std::vector<RerunJudgement> out(samples.size());
  std::vector<double> ps(samples.size(), NAN);
  for (size_t i = 0; i < samples.size(); ++i) {
    const RerunSample& s = samples[i];
    RerunJudgement& r = out[i];
    r.median = Median(s.rerun);
    r.change = RelativeChange(Median(s.window), r.median);
    if (s.rerun.empty() || s.window.empty()) {
      r.p = r.q = NAN;
      continue;
    }
    r.p = ps[i] = MannWhitneyU(s.window, s.rerun).p;
  }
  std::vector<double> qs = BenjaminiHochberg(ps);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].q = qs[i];
    out[i].confirmed = std::isfinite(qs[i]) && qs[i] < alpha && out[i].change >= threshold;
  }
  return out;
}

RunJudgement AfterRerun(RunJudgement newest, const RerunJudgement& rerun) {
  if (newest.verdict == RunVerdict::kSlower || newest.verdict == RunVerdict::kUnconfirmed)
    newest.verdict = rerun.confirmed ? RunVerdict::kSlower : RunVerdict::kUnconfirmed;
  return newest;
}

GateDecision DecideGate(const std::vector<GateCase>& cases, bool steps_fail) {
  GateDecision d;
  for (size_t i = 0; i < cases.size(); ++i) {
    const GateCase& c = cases[i];
    const bool slower = c.newest.verdict == RunVerdict::kSlower;
    d.slower += slower;
    d.unconfirmed += c.newest.verdict == RunVerdict::kUnconfirmed;
    d.steps += c.step_slower;
    if (slower || (steps_fail && c.step_slower)) d.failing.push_back(i);
  }
  d.fails = !d.failing.empty();
  return d;
}

}  // namespace dlb::report

// history check's verdicts (check.h).
#include "tools/report/analyses/check.h"

#include <algorithm>
#include <cmath>

#include "tools/report/render/document.h"

namespace dlb::report {

std::map<std::string, Judged> JudgeNewestRuns(
    const std::vector<std::string>& names,
    const std::map<std::string, std::vector<double>>& medians, const GateOptions& gate,
    const RerunCase& rerun, double confirm_alpha,
    const std::function<std::string(const std::string&)>& repro) {
  std::map<std::string, Judged> out;
  std::vector<std::string> rerun_names;
  std::vector<RerunSample> samples;
  for (const std::string& name : names) {
    const std::vector<double>& v = medians.at(name);
    if (!std::isfinite(v.back())) continue;
    Judged& c = out[name];
    c.j = JudgeNewest(v, gate);
    if (c.j.verdict != RunVerdict::kSlower && c.j.verdict != RunVerdict::kUnconfirmed) continue;
    c.how = "held " + std::to_string(c.j.held) + " of " + std::to_string(gate.hold) + " runs";
    if (!rerun) continue;
    std::string command = repro(name), why = "the run's context names no binary";
    RerunSample s;
    for (size_t i = v.size() - 1 - std::min(v.size() - 1, static_cast<size_t>(gate.window));
         i + 1 < v.size(); ++i)
      if (std::isfinite(v[i])) s.window.push_back(v[i]);
    if (!command.empty()) s.rerun = rerun(name, command, &why);
    if (s.rerun.empty()) c.how = "not re-run: " + why;
    rerun_names.push_back(name);
    samples.push_back(std::move(s));
  }
  std::vector<RerunJudgement> judged = JudgeReruns(samples, gate.threshold, confirm_alpha);
  for (size_t i = 0; i < rerun_names.size(); ++i) {
    Judged& c = out[rerun_names[i]];
    c.j = AfterRerun(c.j, judged[i]);
    if (samples[i].rerun.empty()) continue;
    c.how = "re-run (" + std::to_string(samples[i].rerun.size()) +
            " repetitions): " + FormatSigned(judged[i].change) + ", q " + FormatP(judged[i].q) +
            (judged[i].confirmed ? "" : ", not reproduced");
  }
  return out;
}

std::string StepVerdict(const std::vector<ChangePoint>& cps, bool searched) {
  if (!searched) return "short history";
  if (cps.empty()) return "none";
  return cps.back().change > 0 ? "slower" : "faster";
}

CaseVerdict JudgeCase(const RunJudgement& newest,
                      const std::function<std::string()>& newest_environment,
                      const std::vector<ChangePoint>& cps, bool searched,
                      const std::vector<std::string>& step_environment) {
  CaseVerdict v;
  v.verdict = RunVerdictName(newest.verdict);
  // A change the case's own environment explains is named, not counted as the code's.
  if (v.verdict == "slower" || v.verdict == "unconfirmed" || v.verdict == "faster")
    v.environment = newest_environment();
  if (!v.environment.empty()) {
    v.environment_slower = v.verdict == "slower";
    v.verdict += " (environment)";
  }
  v.step = StepVerdict(cps, searched);
  if (!cps.empty() && !step_environment.back().empty()) {
    if (v.environment.empty()) {
      v.environment_slower = v.step == "slower";
      v.environment = step_environment.back();
    }
    v.step += " (environment)";
  }
  v.step_regresses = v.step == "slower";
  const bool changed = v.verdict == "slower" || v.verdict == "unconfirmed" || v.verdict == "faster";
  v.flagged = v.verdict == "slower" || v.verdict == "unconfirmed" || v.step_regresses;
  v.diagnosed = changed || v.step_regresses;
  v.diagnosis = v.step_regresses && v.verdict != "slower" ? "slower step" : v.verdict;
  return v;
}

bool StepFails(size_t i, const std::vector<ChangePoint>& cps, bool step_regresses, bool environment,
               bool fail_on_env_change) {
  return i + 1 == cps.size() && cps[i].change > 0 &&
         (step_regresses || (environment && fail_on_env_change));
}

}  // namespace dlb::report

// history check's verdicts, apart from reading the store and from writing the document: the gate
// over each case's newest runs (re-running the slower ones under --confirm), each case's verdict
// and step (the direction of its last change point), each marked "(environment)" where the case's
// own libraries, driver or measuring flags changed there, and which of them fail the check.
// Pure functions of the medians, the change points and the environment notes the history read.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tools/report/analyses/changepoints.h"
#include "tools/report/analyses/gate.h"

namespace dlb::report {

// A case's newest run judged by the gate; `how` says what confirmed a slowdown or what it still
// lacks ("-" when it was not slower).
struct Judged {
  RunJudgement j;
  std::string how = "-";
};

// Runs a case's repro command; its repetitions' times in ns, or none with `why`.
using RerunCase = std::function<std::vector<double>(const std::string& name,
                                                    const std::string& repro, std::string* why)>;

// Each case of `names` whose newest median (the last of `medians[name]`) is finite, judged by the
// gate; with `rerun` set, each slower or unconfirmed one is re-run through its `repro` command and
// judged again by the U test at `confirm_alpha`, adjusted across the re-runs.
std::map<std::string, Judged> JudgeNewestRuns(
    const std::vector<std::string>& names,
    const std::map<std::string, std::vector<double>>& medians, const GateOptions& gate,
    const RerunCase& rerun, double confirm_alpha,
    const std::function<std::string(const std::string&)>& repro);

// A case's change-point verdict: the direction of its last change point (the level it is at
// now), "none", or "short history" where its series was too short to search.
std::string StepVerdict(const std::vector<ChangePoint>& cps, bool searched);

struct CaseVerdict {
  std::string verdict;      // the newest run's, "(environment)" where its environment explains it
  std::string step;         // StepVerdict, likewise
  std::string environment;  // the change of environment the verdict or the step meets ("" none)
  bool step_regresses = false;      // the last change point is slower, and the code's
  bool environment_slower = false;  // slower (newest run or step) where the environment changed
  bool flagged = false;             // slower, unconfirmed or a slower step: listed first
  bool diagnosed = false;           // gets the repro command and the kernel diff
  std::string diagnosis;            // what the kernel diff's title calls it
};
// `newest_environment`: the change of environment the newest run's window saw ("" none), asked
// only of a changed newest run. `step_environment`: per change point of `cps`, what changed
// across it ("" nothing).
CaseVerdict JudgeCase(const RunJudgement& newest,
                      const std::function<std::string()>& newest_environment,
                      const std::vector<ChangePoint>& cps, bool searched,
                      const std::vector<std::string>& step_environment);

// Whether change point `i` of a case's `cps` fails the check: the last one, slower, and the
// code's (or the environment's, with `fail_on_env_change`).
bool StepFails(size_t i, const std::vector<ChangePoint>& cps, bool step_regresses, bool environment,
               bool fail_on_env_change);

}  // namespace dlb::report

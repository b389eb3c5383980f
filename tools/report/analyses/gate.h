// The gate history check applies: whether a suite's newest run fails CI. A shared host slows a
// whole run now and then (every case at once, by 10-30%), so one slow run of one case is no
// evidence: a newest-run slowdown fails only once it is confirmed, by the runs after it (it holds
// for the newest `hold` runs) or by re-running the case (JudgeRerun). A slowdown not confirmed
// yet is reported as "unconfirmed" and fails nothing. A case whose last change point is slower
// (changepoints.h) fails too: that is a level the history has confirmed already. Pure functions
// over run medians; history check reads them from the store, the tests and the measured table
// (docs/ci-and-history.md) from synthetic histories.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dlb::report {

struct GateOptions {
  int window = 10;          // runs before the judged ones whose median is the reference
  double threshold = 0.05;  // relative change that matters
  double k = 3;             // and more than k times the case's run-to-run noise (RunNoise)
  int min_history = 3;      // fewer window values: no verdict
  // A slowdown fails once the newest `hold` runs are all slower than the window before them
  // (1: the newest run alone, as a single-run test).
  int hold = 2;
};

enum class RunVerdict { kNew, kShortHistory, kSame, kFaster, kUnconfirmed, kSlower };
// "new", "short history", "same", "faster", "unconfirmed", "slower": history check's verdicts.
const char* RunVerdictName(RunVerdict v);

struct RunJudgement {
  RunVerdict verdict = RunVerdict::kNew;
  double newest = 0;   // the newest run's median
  double median = 0;   // the window's median (NaN without a window)
  double noise = 0;    // RunNoise of every value before the judged runs (relative)
  double change = 0;   // RelativeChange(median, newest)
  double z = 0;        // log(newest / median) / noise; +-inf when the noise is 0
  size_t history = 0;  // values in the window
  int held = 0;        // of the newest `hold` runs, how many in a row (from the newest) are slower
};

// A case's run-to-run noise, robust to steps and to single slow runs: 1.4826 x the median
// absolute difference of successive log medians / sqrt 2 (as the change points estimate it), a
// relative standard deviation. A window's MAD of ten runs misjudges it by 40% either way, and a
// suite of thousands of cases meets the windows that underestimate it; the successive differences
// of every run read are many more. NaN with fewer than two values.
double RunNoise(const std::vector<double>& v);

// `medians`: one case's run medians, oldest first, the newest last, NaN where a run did not
// measure the case (the newest must be finite); as many runs as the caller read (history check:
// up to --history). The newest `hold` runs are judged against the finite values of the `window`
// runs before them: a run is slower when it is at least `threshold` slower than their median and
// more than `k` times the noise of every value before the judged runs away (on a log scale).
// Slower when all `hold` runs are;
// unconfirmed when the newest is and an earlier one of them is not (or did not measure the case);
// faster when the newest run alone is that much faster; new without a window; short history with
// fewer than `min_history` window values.
RunJudgement JudgeNewest(const std::vector<double>& medians, const GateOptions& options);

// The re-run of a case whose newest run is slower (history check --confirm): its repetitions'
// times against the window's run medians, with compare's test: the Mann-Whitney U test and the
// relative change of the medians.
struct RerunJudgement {
  double median = 0;  // the re-run's median
  double change = 0;  // RelativeChange(window's median, re-run's median)
  double p = 1;       // two-sided U test, re-run repetitions against window medians
  double q = 1;       // p adjusted across the re-run cases (Benjamini-Hochberg)
  bool confirmed = false;
};
struct RerunSample {
  std::vector<double> window;  // the window's run medians
  std::vector<double> rerun;   // the re-run's repetition times
};
// Each case's re-run, judged: confirmed when its median is at least `threshold` slower than the
// window's and the BH-adjusted U test gives q < `alpha` (the adjustment is across the cases
// re-run, as compare adjusts across a suite: a suite re-running twenty cases would otherwise
// confirm one by chance). An empty re-run is never confirmed.
std::vector<RerunJudgement> JudgeReruns(const std::vector<RerunSample>& samples, double threshold,
                                        double alpha);
// A judgement of the newest run after its re-run: slower when the re-run confirmed it, else
// unconfirmed (the re-run did not reproduce the slowdown). Other verdicts are left as they are.
RunJudgement AfterRerun(RunJudgement newest, const RerunJudgement& rerun);

// One case's part in the gate: its newest-run judgement and whether its last change point is
// slower.
struct GateCase {
  RunJudgement newest;
  bool step_slower = false;
};
struct GateDecision {
  bool fails = false;
  std::vector<size_t> failing;  // indices of the cases that fail it
  int slower = 0;               // confirmed newest-run slowdowns
  int unconfirmed = 0;          // newest-run slowdowns not confirmed (reported, not failed)
  int steps = 0;                // cases whose last change point is slower
};
// The suite fails when a case's newest-run slowdown is confirmed, or (steps_fail) a case's last
// change point is slower.
GateDecision DecideGate(const std::vector<GateCase>& cases, bool steps_fail);

}  // namespace dlb::report

// Synthetic histories for measuring change-point detectors: run medians of one case over many
// runs, with the noise of real repeated runs and planted steps. The noise classes follow what
// repeated runs show: GPU cases of 0.5-4% CV between runs (with an occasional slow run, a clock
// dip), CPU cases of 2-30% CV (right-skewed: a run is slowed by other work, never sped up),
// bimodal cases (two levels a run lands on, as an autotuner's or an allocator's choice) and a slow
// drift (a machine warming up over weeks). report_changepoint_table prints the docs' table from
// them; report_changepoints_test holds its rates at a fixed seed.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tools/report/analyses/changepoints.h"

namespace dlb::report::synthetic {

enum class Noise { kGpu, kCpu, kBimodal, kDrift };
const char* NoiseName(Noise n);

struct History {
  std::vector<double> values;  // run medians, oldest first
  size_t step_at = 0;          // first run after the planted step; 0: none
  double step = 0;             // its relative size (> 0 slower)
};

// `runs` medians around 1 ms of the noise class; a step of relative size `step` (0: none) at a
// run drawn uniformly from the middle 60% of the history.
History Make(Noise noise, int runs, double step, std::mt19937_64& rng);

// The noise both these histories and the gate's suites (report_suite.h) draw from. A case's
// between-run CV, log-uniform over its class's range: GPU 0.5-4%, CPU 2-30%.
double GpuCv(std::mt19937_64& rng);
double CpuCv(std::mt19937_64& rng);
// The factor of one run under log-normal noise of `cv` with mean 1, from a standard normal draw
// `z` (the caller's distribution, so that its sequence of draws stays its own).
double LogNormal(double cv, double z);

// How a detector did on one history.
struct Outcome {
  bool found = false;    // a slower change within `slack` runs of the planted step
  int false_alarms = 0;  // every other change it reported
};

// The detector under test: FindChangePoints with options.
Outcome Score(const History& h, const ChangePointOptions& options, int slack = 3);
// The single-step check history check ran before the detector, as CI runs it: after every run
// from the 11th on, the newest run against the 10 before it (5% and 3 scaled MADs) and FindStep
// over those 11; a failing check (a slower newest run or a lasting slower step) within 10 runs
// after the planted step finds it; any other failing check is a false alarm.
Outcome ScoreWindowCheck(const History& h);

struct Rates {
  int histories = 0;
  int found = 0;
  int with_false_alarm = 0;  // histories with at least one
  int false_alarms = 0;      // all of them
};
// `count` histories of the class with the step; `detector` null: the window check.
Rates Measure(Noise noise, int runs, double step, int count, uint64_t seed,
              const ChangePointOptions* detector);

}  // namespace dlb::report::synthetic

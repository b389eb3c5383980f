// Synthetic suites for measuring history check's gate (analyses/gate.h): many cases' run medians
// over the same runs, as a CI job adds them one run at a time, with a noise class per case,
// outlier runs, and a planted step in some cases. report_gate_table prints the docs' table of the
// gate's false failures and detection delays from them; report_gate_test holds the gate's goal at
// a fixed seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "tools/report/analyses/changepoints.h"
#include "tools/report/analyses/gate.h"

namespace dlb::report::synthetic {

// Each case's between-run CV: 1% for every case; drawn log-uniformly from 0.5-4% per case; or
// from 2-30% per case. The run medians are log-normal around the case's level with that CV.
enum class SuiteNoise { kGpu1, kGpuRange, kCpu };
const char* SuiteNoiseName(SuiteNoise n);

// Outlier runs: `whole` slows every case of a run at once (a shared host's busy run); `per_case`
// slows each case's run on its own.
enum class Outliers { kNone, kWholeRun, kPerCase };
const char* OutliersName(Outliers o);

struct SuiteSpec {
  SuiteNoise noise = SuiteNoise::kGpu1;
  Outliers outliers = Outliers::kWholeRun;
  double outlier_rate = 0.02;                   // of runs (or of case-runs)
  double outlier_lo = 0.10, outlier_hi = 0.30;  // slowed by 1 + U(lo, hi)
  int cases = 200, runs = 24;
  // The first `stepped` cases are `step` slower (relative) from run `step_at` on (0: no step).
  int stepped = 0;
  double step = 0;
  int step_at = 0;
};

// Per case its run medians, oldest first.
using Suite = std::vector<std::vector<double>>;
Suite MakeSuite(const SuiteSpec& spec, std::mt19937_64& rng);

// The gate as history check applies it: each case's newest run judged against the window before
// the held runs, its change points over the runs read, the suite's decision.
struct GateSetup {
  GateOptions gate;
  ChangePointOptions changes;
  bool steps_fail = true;
};
// The gate on the first `runs` runs of every case of `suite` (the CI run after run `runs`).
GateDecision RunGate(const Suite& suite, size_t runs, const GateSetup& setup);

}  // namespace dlb::report::synthetic

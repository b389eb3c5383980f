#include "tests/tools/report/analyses/report_suite.h"

#include <cmath>

#include "tests/tools/report/analyses/report_synthetic.h"

namespace dlb::report::synthetic {

const char* SuiteNoiseName(SuiteNoise n) {
  switch (n) {
    case SuiteNoise::kGpu1:
      return "GPU, 1% CV";
    case SuiteNoise::kGpuRange:
      return "GPU, 0.5-4% CV";
    case SuiteNoise::kCpu:
      return "CPU, 2-30% CV";
  }
  return "?";
}

const char* OutliersName(Outliers o) {
  switch (o) {
    case Outliers::kNone:
      return "none";
    case Outliers::kWholeRun:
      return "whole runs";
    case Outliers::kPerCase:
      return "per case";
  }
  return "?";
}

Suite MakeSuite(const SuiteSpec& s, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0, 1);
  std::uniform_real_distribution<double> unit(0, 1), slow(s.outlier_lo, s.outlier_hi);
  auto outlier = [&] { return unit(rng) < s.outlier_rate ? 1 + slow(rng) : 1.0; };
  std::vector<double> whole(static_cast<size_t>(s.runs), 1.0);
  if (s.outliers == Outliers::kWholeRun)
    for (double& w : whole) w = outlier();
  Suite suite(static_cast<size_t>(s.cases));
  for (int c = 0; c < s.cases; ++c) {
    double cv = 0.01;
    if (s.noise == SuiteNoise::kGpuRange) cv = GpuCv(rng);
    if (s.noise == SuiteNoise::kCpu) cv = CpuCv(rng);
    std::vector<double>& v = suite[static_cast<size_t>(c)];
    for (int r = 0; r < s.runs; ++r) {
      double x = 1e6 * LogNormal(cv, normal(rng)) * whole[r];
      if (s.outliers == Outliers::kPerCase) x *= outlier();
      if (c < s.stepped && s.step_at > 0 && r >= s.step_at) x *= 1 + s.step;
      v.push_back(x);
    }
  }
  return suite;
}

GateDecision RunGate(const Suite& suite, size_t runs, const GateSetup& setup) {
  std::vector<GateCase> cases;
  cases.reserve(suite.size());
  const size_t min_points = 2 * static_cast<size_t>(std::max(setup.changes.min_segment, 1));
  for (const std::vector<double>& all : suite) {
    std::vector<double> v(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(runs));
    GateCase c;
    c.newest = JudgeNewest(v, setup.gate);
    if (v.size() >= min_points) {
      std::vector<ChangePoint> cps = FindChangePoints(v, setup.changes);
      c.step_slower = !cps.empty() && cps.back().change > 0;
    }
    cases.push_back(c);
  }
  return DecideGate(cases, setup.steps_fail);
}

}  // namespace dlb::report::synthetic

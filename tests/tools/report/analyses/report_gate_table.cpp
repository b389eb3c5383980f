// Not a test: prints the tables of docs/ci-and-history.md on history check's gate — how often a
// whole suite's CI run fails it on flat histories (no change anywhere), per noise class, outlier
// model and suite size, for the single-run test and for a slowdown held over 2 and 3 runs; and how
// many runs after a 5% and a 10% step a stepped case takes to fail it. Run:
//   build/release/tests/tools/report_gate_table [--trials 500] [--trials-large 100] [--runs 24]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/tools/report/analyses/report_suite.h"
#include "tools/report/render/document.h"

using namespace dlb::report;
using namespace dlb::report::synthetic;

namespace {

const int kHolds[] = {1, 2, 3};

// Each case's last change point over the first `runs` runs: slower or not.
std::vector<bool> StepsSlower(const Suite& suite, size_t runs, const ChangePointOptions& o) {
  std::vector<bool> out;
  for (const std::vector<double>& all : suite) {
    std::vector<double> v(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(runs));
    std::vector<ChangePoint> cps = FindChangePoints(v, o);
    out.push_back(!cps.empty() && cps.back().change > 0);
  }
  return out;
}

GateDecision Decide(const Suite& suite, size_t runs, const std::vector<bool>& steps, int hold) {
  GateOptions g;
  g.hold = hold;
  std::vector<GateCase> cases;
  for (size_t c = 0; c < suite.size(); ++c) {
    std::vector<double> v(suite[c].begin(), suite[c].begin() + static_cast<std::ptrdiff_t>(runs));
    cases.push_back({JudgeNewest(v, g), steps[c]});
  }
  return DecideGate(cases, true);
}

std::string Percent(int k, int n) { return FormatPercent(static_cast<double>(k) / n, 1); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"false failures and detection delays of history check's gate"};
  int trials = 500, trials_large = 100, runs = 24, stepped_suites = 40, after = 20;
  uint64_t seed = 45;
  app.add_option("--trials", trials, "flat suites of 200 cases per row (500)");
  app.add_option("--trials-large", trials_large, "flat suites of 2,000 cases per row (100)");
  app.add_option("--runs", runs, "runs per flat history; the CI run is the newest (24)");
  app.add_option("--stepped-suites", stepped_suites,
                 "suites of 10 stepped cases per noise class and step (40)");
  app.add_option("--after", after, "runs after the step (20)");
  app.add_option("--seed", seed, "generator seed (45)");
  ChangePointOptions changes;
  app.add_option("--change-threshold", changes.threshold,
                 "change points: least change of the segments' medians (0.02)");
  CLI11_PARSE(app, argc, argv);

  std::printf(
      "| noise | outlier runs | cases | single run fails | held 2 runs (default) | of which "
      "change points | held 3 runs |\n| --- | --- | --- | --- | --- | --- | --- |\n");
  for (SuiteNoise noise : {SuiteNoise::kGpu1, SuiteNoise::kGpuRange, SuiteNoise::kCpu})
    for (Outliers outliers : {Outliers::kWholeRun, Outliers::kPerCase})
      for (int cases : {200, 2000}) {
        SuiteSpec spec;
        spec.noise = noise;
        spec.outliers = outliers;
        spec.cases = cases;
        spec.runs = runs;
        const int n = cases > 200 ? trials_large : trials;
        std::mt19937_64 rng(seed + static_cast<uint64_t>(cases));
        int failed[3] = {0, 0, 0}, steps_only = 0;
        for (int t = 0; t < n; ++t) {
          Suite s = MakeSuite(spec, rng);
          std::vector<bool> steps = StepsSlower(s, s.front().size(), changes);
          for (int h = 0; h < 3; ++h) {
            GateDecision d = Decide(s, s.front().size(), steps, kHolds[h]);
            failed[h] += d.fails;
            if (kHolds[h] == 2) steps_only += d.fails && d.slower == 0;
          }
        }
        std::printf("| %s | %s | %d | %s | %s | %s | %s |\n", SuiteNoiseName(noise),
                    OutliersName(outliers), cases, Percent(failed[0], n).c_str(),
                    Percent(failed[1], n).c_str(), Percent(steps_only, n).c_str(),
                    Percent(failed[2], n).c_str());
        std::fflush(stdout);
      }
  std::printf(
      "\n%d flat suites of 200 cases and %d of 2,000 per row, %d runs each (the CI run: the "
      "newest), 2%% outlier runs of +10..30%%, window 10, threshold 5%%, 3 x the run-to-run "
      "noise, change points as history check finds them (PELT, p < 0.0001, %s); seed %llu.\n\n",
      trials, trials_large, runs, FormatPercent(changes.threshold).c_str(),
      static_cast<unsigned long long>(seed));

  // Detection: 10 stepped cases a suite (whole-run outliers), a step after 24 flat runs; the CI
  // run after each of the next `after` runs; per case, the first at which it fails the gate.
  const int checkpoints[] = {1, 2, 3, 5, 10};
  std::printf("| noise | step | gate |");
  for (int k : checkpoints) std::printf(" failed by run %d |", k);
  std::printf(" failed by run %d | median runs |\n| --- | --- | --- |", after);
  for (size_t i = 0; i <= std::size(checkpoints); ++i) std::printf(" --- |");
  std::printf(" --- |\n");
  for (SuiteNoise noise : {SuiteNoise::kGpu1, SuiteNoise::kGpuRange, SuiteNoise::kCpu})
    for (double step : {0.05, 0.10}) {
      SuiteSpec spec;
      spec.noise = noise;
      spec.cases = spec.stepped = 10;
      spec.step = step;
      spec.step_at = 24;
      spec.runs = 24 + after;
      std::mt19937_64 rng(seed + static_cast<uint64_t>(step * 1000));
      std::vector<std::vector<int>> delays(
          3);  // per hold, per case: runs to fail, after + 1: never
      for (int t = 0; t < stepped_suites; ++t) {
        Suite s = MakeSuite(spec, rng);
        std::vector<std::vector<int>> first(3, std::vector<int>(s.size(), after + 1));
        for (int k = 1; k <= after; ++k) {
          const size_t runs_read = static_cast<size_t>(spec.step_at + k);
          std::vector<bool> steps = StepsSlower(s, runs_read, changes);
          for (int h = 0; h < 3; ++h)
            for (size_t c : Decide(s, runs_read, steps, kHolds[h]).failing)
              first[h][c] = std::min(first[h][c], k);
        }
        for (int h = 0; h < 3; ++h)
          delays[h].insert(delays[h].end(), first[h].begin(), first[h].end());
      }
      for (int h = 0; h < 3; ++h) {
        std::vector<int>& d = delays[h];
        std::sort(d.begin(), d.end());
        const int total = static_cast<int>(d.size());
        std::string line = std::string("| ") + SuiteNoiseName(noise) + " | " +
                           FormatPercent(step, 0) + " | " +
                           (kHolds[h] == 1   ? "single run"
                            : kHolds[h] == 2 ? "held 2 runs (default)"
                                             : "held 3 runs") +
                           " |";
        for (int k : checkpoints) {
          int by = static_cast<int>(std::upper_bound(d.begin(), d.end(), k) - d.begin());
          line += " " + Percent(by, total) + " |";
        }
        int by = static_cast<int>(std::upper_bound(d.begin(), d.end(), after) - d.begin());
        const int median = d[d.size() / 2];
        line += " " + Percent(by, total) + " | " +
                (median > after ? "> " + std::to_string(after) : std::to_string(median)) + " |";
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
      }
    }
  std::printf(
      "\n%d suites of 10 stepped cases per noise class and step (%d cases), 24 flat runs before "
      "the step, whole-run outliers as above; run k: the CI run after the k-th run at the new "
      "level.\n",
      stepped_suites, stepped_suites * 10);
  return 0;
}

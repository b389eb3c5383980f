// The gate history check applies (tools/report/analyses/gate.h): its verdicts on series one can
// check by eye, the re-run's judgement, and its goal on synthetic suites at a fixed seed: a flat
// suite of 200 cases x 24 runs at 1% CV with 2% whole-run outliers fails at most 1 CI run in 10,
// and a 10% step held for the newest 3 runs fails it and names every stepped case.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"
#include "tests/tools/report/analyses/report_suite.h"
#include "tools/report/analyses/gate.h"
#include "tools/report/analyses/repro.h"
#include "tools/report/analyses/rerun.h"

namespace dlb::report {
namespace {

// Ten runs around 100 (1% apart), then the judged runs.
std::vector<double> Series(std::vector<double> newest) {
  std::vector<double> v = {100, 101, 99, 100, 102, 98, 100, 101, 99, 100};
  v.insert(v.end(), newest.begin(), newest.end());
  return v;
}

TEST(Gate, ASlowNewestRunAloneIsUnconfirmed) {
  RunJudgement j = JudgeNewest(Series({100, 120}), {});
  EXPECT_EQ(j.verdict, RunVerdict::kUnconfirmed);
  EXPECT_STREQ(RunVerdictName(j.verdict), "unconfirmed");
  EXPECT_EQ(j.held, 1);
  EXPECT_EQ(j.history, 10u);  // the ten runs before the newest two
  EXPECT_DOUBLE_EQ(j.median, 100);
  EXPECT_NEAR(j.change, 0.2, 1e-12);
}

TEST(Gate, ASlowdownHeldForTwoRunsIsSlower) {
  RunJudgement j = JudgeNewest(Series({112, 120}), {});
  EXPECT_EQ(j.verdict, RunVerdict::kSlower);
  EXPECT_EQ(j.held, 2);
  // A slow run before a normal newest one: the newest run is what is judged.
  EXPECT_EQ(JudgeNewest(Series({130, 100}), {}).verdict, RunVerdict::kSame);
  // The previous run did not measure the case: nothing confirms the newest.
  EXPECT_EQ(JudgeNewest(Series({NAN, 120}), {}).verdict, RunVerdict::kUnconfirmed);
  // Slower but below the threshold: the same.
  EXPECT_EQ(JudgeNewest(Series({104, 104}), {}).verdict, RunVerdict::kSame);
}

TEST(Gate, HoldSetsHowManyRunsConfirm) {
  GateOptions one;
  one.hold = 1;
  EXPECT_EQ(JudgeNewest(Series({120}), one).verdict, RunVerdict::kSlower);
  GateOptions three;
  three.hold = 3;
  RunJudgement j = JudgeNewest(Series({100, 120, 120}), three);
  EXPECT_EQ(j.verdict, RunVerdict::kUnconfirmed);
  EXPECT_EQ(j.held, 2);
  EXPECT_EQ(JudgeNewest(Series({115, 120, 120}), three).verdict, RunVerdict::kSlower);
}

TEST(Gate, FasterNewAndShortHistory) {
  EXPECT_EQ(JudgeNewest(Series({100, 80}), {}).verdict, RunVerdict::kFaster);
  EXPECT_EQ(JudgeNewest({NAN, NAN, 100}, {}).verdict, RunVerdict::kNew);
  EXPECT_EQ(JudgeNewest({100}, {}).verdict, RunVerdict::kNew);
  EXPECT_EQ(JudgeNewest({100, 100, 100, 130}, {}).verdict, RunVerdict::kShortHistory);
  // The window is the `window` runs before the judged ones: an old slow level is left out.
  GateOptions o;
  o.window = 4;
  std::vector<double> v = {200, 200, 200, 200, 200, 100, 100, 101, 99, 100, 120};
  RunJudgement j = JudgeNewest(v, o);
  EXPECT_EQ(j.history, 4u);
  EXPECT_DOUBLE_EQ(j.median, 100);
  EXPECT_EQ(j.verdict, RunVerdict::kUnconfirmed);
}

TEST(Gate, AReRunConfirmsOnlyAReproducedSlowdown) {
  const std::vector<double> window = {100, 101, 99, 100, 102, 98, 100, 101, 99, 100};
  std::vector<RerunSample> s = {{window, {111, 112, 110, 113, 111, 112, 110, 111, 112, 111}},
                                {window, {100, 101, 99, 100, 101, 100, 99, 101, 100, 100}},
                                {window, {}}};
  std::vector<RerunJudgement> r = JudgeReruns(s, 0.05, 0.05);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TRUE(r[0].confirmed);
  EXPECT_NEAR(r[0].change, 0.11, 0.005);
  EXPECT_LT(r[0].q, 0.001);
  EXPECT_FALSE(r[1].confirmed);
  EXPECT_FALSE(r[2].confirmed);
  EXPECT_TRUE(std::isnan(r[2].p));
  // Significant but below the threshold: not a regression either.
  EXPECT_FALSE(
      JudgeReruns({{window, {103, 104, 103, 104, 103, 104, 103, 104, 103, 104}}}, 0.05, 0.05)[0]
          .confirmed);
  RunJudgement unconfirmed = JudgeNewest(Series({100, 120}), {});
  EXPECT_EQ(AfterRerun(unconfirmed, r[0]).verdict, RunVerdict::kSlower);
  EXPECT_EQ(AfterRerun(unconfirmed, r[1]).verdict, RunVerdict::kUnconfirmed);
  RunJudgement same = JudgeNewest(Series({100, 100}), {});
  EXPECT_EQ(AfterRerun(same, r[0]).verdict, RunVerdict::kSame);
}

TEST(Gate, DecideFailsOnConfirmedSlowdownsAndSlowerSteps) {
  GateCase slower, unconfirmed, step;
  slower.newest.verdict = RunVerdict::kSlower;
  unconfirmed.newest.verdict = RunVerdict::kUnconfirmed;
  step.newest.verdict = RunVerdict::kSame;
  step.step_slower = true;
  GateDecision d = DecideGate({unconfirmed, slower, step}, true);
  EXPECT_TRUE(d.fails);
  EXPECT_EQ(d.failing, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(d.slower, 1);
  EXPECT_EQ(d.unconfirmed, 1);
  EXPECT_EQ(d.steps, 1);
  EXPECT_FALSE(DecideGate({unconfirmed}, true).fails);
  EXPECT_FALSE(DecideGate({unconfirmed, step}, false).fails);
}

// ---- the goal, on synthetic suites (tests/tools/report/analyses/report_suite.h) ----

// Of `trials` suites of `spec`, how many CI runs (each suite's newest run) fail the gate.
int FailingRuns(const synthetic::SuiteSpec& spec, int trials, int hold, uint64_t seed) {
  std::mt19937_64 rng(seed);
  synthetic::GateSetup setup;
  setup.gate.hold = hold;
  int failed = 0;
  for (int t = 0; t < trials; ++t) {
    synthetic::Suite s = synthetic::MakeSuite(spec, rng);
    failed += synthetic::RunGate(s, s.front().size(), setup).fails;
  }
  return failed;
}

TEST(GateGoal, AFlatSuiteWithWholeRunOutliersFailsAtMostOneRunInTen) {
  synthetic::SuiteSpec flat;  // 200 cases x 24 runs, 1% CV, 2% whole-run outliers of +10..30%
  const int trials = 100;
  EXPECT_LE(FailingRuns(flat, trials, 2, 45), trials / 10);
  // Outliers of each case's own runs are what the single-run test fails on: nearly every run of
  // 200 cases has one.
  synthetic::SuiteSpec per_case;
  per_case.outliers = synthetic::Outliers::kPerCase;
  EXPECT_GE(FailingRuns(per_case, 20, 1, 47), 18);
  EXPECT_LE(FailingRuns(per_case, 20, 3, 47), 2);
}

TEST(GateGoal, ATenPercentStepHeldForThreeRunsFailsAndNamesEveryStepped) {
  synthetic::SuiteSpec spec;
  spec.stepped = 20;
  spec.step = 0.10;
  spec.step_at = spec.runs - 3;
  std::mt19937_64 rng(48);
  std::vector<size_t> stepped;
  for (size_t i = 0; i < 20; ++i) stepped.push_back(i);
  for (int t = 0; t < 10; ++t) {
    synthetic::Suite s = synthetic::MakeSuite(spec, rng);
    GateDecision d = synthetic::RunGate(s, s.front().size(), {});
    EXPECT_TRUE(d.fails) << "suite " << t;
    EXPECT_EQ(d.failing, stepped) << "suite " << t;
    // Two runs into the step it fails already; one run in, it is unconfirmed.
    EXPECT_EQ(synthetic::RunGate(s, s.front().size() - 1, {}).failing, stepped);
    GateDecision first = synthetic::RunGate(s, s.front().size() - 2, {});
    EXPECT_FALSE(first.fails) << "suite " << t;
    EXPECT_GE(first.unconfirmed, 20) << "suite " << t;  // all 200 when that run was an outlier
  }
}

// ---- the re-run of --confirm, through a stand-in benchmark binary ----

TEST(GateRerun, RunsTheReproWithItsRepetitionsAndReadsTheCase) {
  dlb::testing::TempDir dir("rerun");
  // A benchmark binary's stand-in: writes --benchmark_out with as many repetitions as asked (the
  // last --benchmark_repetitions wins, as Google Benchmark reads them), each 110 us.
  const std::string bench = dir.Write("bench_gemm", R"(#!/bin/sh
reps=1; out=
for a in "$@"; do
  case "$a" in
    --benchmark_repetitions=*) reps=${a#*=} ;;
    --benchmark_out=*) out=${a#*=} ;;
    --fail) echo "CUDA error: out of memory" >&2; exit 2 ;;
  esac
done
{
  echo '{"context": {"date": "2026-01-01T00:00:00Z", "host_name": "box"}, "benchmarks": ['
  i=0
  while [ $i -lt $reps ]; do
    [ $i -gt 0 ] && echo ,
    echo '{"name": "gemm/cpu/onednn/square.64/dt:f32/manual_time", "run_name": "gemm/cpu/onednn/square.64/dt:f32/manual_time", "run_type": "iteration", "repetitions": '$reps', "repetition_index": '$i', "real_time": 110, "time_unit": "us"}'
    i=$((i + 1))
  done
  echo ']}'
} > "$out"
)");
  ASSERT_EQ(chmod(bench.c_str(), 0755), 0);
  const std::string name = "gemm/cpu/onednn/square.64/dt:f32/manual_time";
  const std::string repro = ShellQuote(bench) + " " +
                            ShellQuote("--benchmark_filter=" + AnchoredFilter(name)) +
                            " --benchmark_repetitions=3";
  std::string why;
  std::vector<double> reps = RerunCase(name, repro, 7, &why);
  ASSERT_EQ(reps.size(), 7u) << why;
  EXPECT_DOUBLE_EQ(reps[0], 110e3);
  // A case the output lacks, a failing command: empty, and why.
  EXPECT_TRUE(RerunCase("gemm/cpu/onednn/other/dt:f32", repro, 3, &why).empty());
  EXPECT_NE(why.find("has no gemm/cpu/onednn/other/dt:f32"), std::string::npos) << why;
  EXPECT_TRUE(RerunCase(name, repro + " --fail", 3, &why).empty());
  EXPECT_NE(why.find("exit 2"), std::string::npos) << why;
  EXPECT_NE(why.find("out of memory"), std::string::npos) << why;
}

}  // namespace
}  // namespace dlb::report

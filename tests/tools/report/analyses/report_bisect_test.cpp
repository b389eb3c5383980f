// bisect's pure parts: how a step is judged against the two endpoints, the filter that picks one
// case and the commands it prints. The git, the processes and the kernel diff across the first bad
// commit are tested end to end by bisect_test.sh.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>

#include "tools/report/analyses/bisect.h"
#include "tools/report/analyses/repro.h"

namespace dlb::report {
namespace {

// 8 repetitions around `us` microseconds, `spread` apart (relative), in ns.
Bench Reps(double us, double spread = 0.002) {
  Bench b;
  b.name = "gemm/cpu/onednn/square.1024/dt:f32";
  b.family = "gemm";
  for (int i = 0; i < 8; ++i) {
    double t = us * 1e3 * (1 + spread * (i - 3.5));
    b.real_ns.push_back(t);
    b.cpu_ns.push_back(t);
  }
  return b;
}

TEST(Bisect, JudgesAStepByBothEndpoints) {
  const Bench good = Reps(100), bad = Reps(200);
  const CompareOptions opt;
  struct Want {
    double us, spread;
    StepCall call;
    const char* why;
  };
  const Want cases[] = {
      {101, 0.002, StepCall::kGood, "not slower than good"},  // within the threshold of good
      {80, 0.002, StepCall::kGood, "not slower than good"},   // faster than good: no regression
      {198, 0.002, StepCall::kBad, "slower than good, not faster than bad"},
      {240, 0.002, StepCall::kBad, "slower than good, not faster than bad"},  // slower still
      // Significantly unlike both: by the position on the log scale from good to bad.
      {115, 0.002, StepCall::kGood, "between good and bad, in the good third"},
      {175, 0.002, StepCall::kBad, "between good and bad, in the bad third"},
      {141, 0.002, StepCall::kSkip, "between good and bad, in the middle third: ambiguous"},
      // Repetitions spread from 30 to 270 us: the U test tells it from neither.
      {150, 0.25, StepCall::kSkip, "not significantly different from either: noisy"},
  };
  for (const Want& w : cases) {
    Judgement j = JudgeStep(good, bad, Reps(w.us, w.spread), opt);
    EXPECT_EQ(j.call, w.call) << w.us << " us: " << j.why;
    EXPECT_EQ(j.why.rfind(w.why, 0), 0u) << w.us << " us: " << j.why;
    EXPECT_NEAR(j.position, std::log(w.us / 100) / std::log(2.0), 0.01) << w.us;
  }
  // The same numbers as compare: the step against good is compare's row.
  Judgement j = JudgeStep(good, bad, Reps(198), opt);
  EXPECT_EQ(j.vs_good.verdict, Verdict::kSlower);
  EXPECT_NEAR(j.vs_good.delta, 0.98, 1e-9);
  EXPECT_NEAR(j.vs_good.p, SmallestP(8), 1e-12);
  EXPECT_EQ(j.vs_bad.verdict, Verdict::kSame);
}

TEST(Bisect, EndpointsCloserThanTwiceTheThresholdUseThePosition) {
  // Good 100, bad 108: a step at 104 is within 5% of both; it lies in the middle third.
  Judgement mid = JudgeStep(Reps(100), Reps(108), Reps(104), {});
  EXPECT_EQ(mid.call, StepCall::kSkip) << mid.why;
  EXPECT_EQ(mid.why.rfind("within the threshold of both", 0), 0u) << mid.why;
  Judgement near_good = JudgeStep(Reps(100), Reps(108), Reps(101), {});
  EXPECT_EQ(near_good.call, StepCall::kGood) << near_good.why;
}

TEST(Bisect, SmallestPOfTheExactUTest) {
  EXPECT_NEAR(SmallestP(3), 2.0 / 20, 1e-15);
  EXPECT_NEAR(SmallestP(4), 2.0 / 70, 1e-15);
  EXPECT_NEAR(SmallestP(8), 2.0 / 12870, 1e-15);
}

TEST(Bisect, FilterSelectsExactlyTheCase) {
  const std::string name = "gemm/cpu/onednn/square.1024/dt:f32";
  EXPECT_EQ(CaseBaseName(name + "/manual_time"), name);
  EXPECT_EQ(CaseBaseName(name), name);
  EXPECT_EQ(CaseFamily(name), "gemm");
  // Google Benchmark matches its filter with std::regex, extended syntax.
  for (const std::string& given : {name, name + "/manual_time"}) {
    std::regex re(CaseFilter(given), std::regex::extended);
    EXPECT_TRUE(std::regex_search(name + "/manual_time", re)) << CaseFilter(given);
    EXPECT_TRUE(std::regex_search(name, re));
    EXPECT_TRUE(std::regex_search(name + "/real_time", re));
    EXPECT_FALSE(std::regex_search("gemm/cpu/onednn/squareX1024/dt:f32/manual_time", re));
    EXPECT_FALSE(std::regex_search(name + ".twice/manual_time", re));
    EXPECT_FALSE(std::regex_search("x" + name, re));
  }
  std::regex special(CaseFilter("a+b/(c)|d"), std::regex::extended);
  EXPECT_TRUE(std::regex_search("a+b/(c)|d", special));
  EXPECT_FALSE(std::regex_search("aab/c", special));
}

TEST(Bisect, CommandsAreShellQuoted) {
  EXPECT_EQ(ShellQuote("gemm/cpu/x.1/dt:f32"), "gemm/cpu/x.1/dt:f32");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(BisectCommand("v1.2-3-gabc-dirty", "def", "conv/gpu/cudnn/r.c/bs:64/manual_time"),
            "dlbench-report bisect --good v1.2-3-gabc --bad def --case conv/gpu/cudnn/r.c/bs:64");
  EXPECT_EQ(StepBisect("abc", "def", "g/c/b/w"),
            "dlbench-report bisect --good abc --bad def "
            "--case g/c/b/w");
  EXPECT_EQ(StepBisect("abc", "abc-dirty", "g/c/b/w"),
            "the same commit on both sides: not a code change");
  EXPECT_EQ(StepBisect("unknown", "abc", "g/c/b/w"), "no git revision stored for the runs");
}

}  // namespace
}  // namespace dlb::report

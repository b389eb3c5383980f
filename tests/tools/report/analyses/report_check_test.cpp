// history check's verdicts (tools/report/analyses/check.h) on made-up judgements and change
// points: what the environment explains, which cases are flagged and diagnosed, which change
// point fails the check, and the gate with and without a re-run.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tools/report/analyses/check.h"

namespace dlb::report {
namespace {

RunJudgement Newest(RunVerdict v) {
  RunJudgement j;
  j.verdict = v;
  return j;
}

ChangePoint Step(double change) {
  ChangePoint c;
  c.change = change;
  return c;
}

std::string Env(const std::string& note) { return note; }

TEST(CheckVerdicts, ASlowerNewestRunIsFlaggedAndDiagnosed) {
  const CaseVerdict v =
      JudgeCase(Newest(RunVerdict::kSlower), [] { return std::string(); }, {}, false, {});
  EXPECT_EQ(v.verdict, "slower");
  EXPECT_EQ(v.step, "short history");
  EXPECT_TRUE(v.flagged);
  EXPECT_TRUE(v.diagnosed);
  EXPECT_EQ(v.diagnosis, "slower");
  EXPECT_FALSE(v.step_regresses);
  EXPECT_FALSE(v.environment_slower);
  EXPECT_EQ(v.environment, "");
}

TEST(CheckVerdicts, ASlowdownItsEnvironmentExplainsIsNamedNotFlagged) {
  const CaseVerdict v =
      JudgeCase(Newest(RunVerdict::kSlower), [] { return Env("cuDNN 9.14.0 -> 9.19.0 at #17"); },
                {}, true, {});
  EXPECT_EQ(v.verdict, "slower (environment)");
  EXPECT_EQ(v.step, "none");
  EXPECT_EQ(v.environment, "cuDNN 9.14.0 -> 9.19.0 at #17");
  EXPECT_TRUE(v.environment_slower);
  EXPECT_FALSE(v.flagged);
  EXPECT_FALSE(v.diagnosed);
}

TEST(CheckVerdicts, TheEnvironmentIsAskedOnlyOfAChangedNewestRun) {
  const CaseVerdict v = JudgeCase(Newest(RunVerdict::kSame),
                                  [] {
                                    ADD_FAILURE()
                                        << "asked for the environment of an unchanged run";
                                    return std::string();
                                  },
                                  {Step(-0.2)}, true, {""});
  EXPECT_EQ(v.verdict, "same");
  EXPECT_EQ(v.step, "faster");
  EXPECT_FALSE(v.flagged);
  EXPECT_FALSE(v.diagnosed);
}

TEST(CheckVerdicts, ASlowerLastChangePointRegressesWhereTheNewestRunDoesNot) {
  const CaseVerdict v = JudgeCase(Newest(RunVerdict::kSame), [] { return std::string(); },
                                  {Step(-0.1), Step(0.3)}, true, {"", ""});
  EXPECT_EQ(v.step, "slower");
  EXPECT_TRUE(v.step_regresses);
  EXPECT_TRUE(v.flagged);
  EXPECT_TRUE(v.diagnosed);
  EXPECT_EQ(v.diagnosis, "slower step");
  EXPECT_FALSE(StepFails(0, {Step(-0.1), Step(0.3)}, v.step_regresses, false, false));
  EXPECT_TRUE(StepFails(1, {Step(-0.1), Step(0.3)}, v.step_regresses, false, false));
}

TEST(CheckVerdicts, AStepAtAChangeOfEnvironmentFailsOnlyWhenAsked) {
  const std::vector<ChangePoint> cps = {Step(0.3)};
  const CaseVerdict v = JudgeCase(Newest(RunVerdict::kSame), [] { return std::string(); }, cps,
                                  true, {"driver 570 -> 580 at #40"});
  EXPECT_EQ(v.step, "slower (environment)");
  EXPECT_EQ(v.environment, "driver 570 -> 580 at #40");
  EXPECT_TRUE(v.environment_slower);
  EXPECT_FALSE(v.step_regresses);
  EXPECT_FALSE(v.flagged);
  EXPECT_FALSE(StepFails(0, cps, v.step_regresses, true, false));
  EXPECT_TRUE(StepFails(0, cps, v.step_regresses, true, true));
  EXPECT_FALSE(StepFails(0, {Step(-0.3)}, false, true, true)) << "a faster step fails nothing";
}

// Ten window runs at 100 ns, then the newest: judged alone (hold 1); a run that did not measure the
// case gets no judgement; a slower one that cannot be re-run says why and stays unconfirmed.
TEST(CheckVerdicts, TheGateJudgesTheNewestRunsAndSaysHowItConfirmed) {
  std::vector<double> slower(10, 100.0), missing(10, 100.0);
  for (size_t i = 0; i < slower.size(); ++i) slower[i] += double(i % 3);
  missing = slower;
  slower.push_back(150);
  missing.push_back(NAN);
  const std::map<std::string, std::vector<double>> medians = {{"a", slower}, {"b", missing}};
  GateOptions gate;
  gate.hold = 1;
  const auto repro = [](const std::string& name) { return "bench " + name; };
  std::map<std::string, Judged> j =
      JudgeNewestRuns({"a", "b"}, medians, gate, RerunCase(), 0.05, repro);
  ASSERT_EQ(j.count("b"), 0u);
  ASSERT_EQ(j.count("a"), 1u);
  EXPECT_EQ(j["a"].j.verdict, RunVerdict::kSlower);
  EXPECT_EQ(j["a"].how, "held 1 of 1 runs");

  const RerunCase fails = [](const std::string&, const std::string& command, std::string* why) {
    EXPECT_EQ(command, "bench a");
    *why = "the binary is gone";
    return std::vector<double>{};
  };
  j = JudgeNewestRuns({"a"}, medians, gate, fails, 0.05, repro);
  EXPECT_EQ(j["a"].j.verdict, RunVerdict::kUnconfirmed);
  EXPECT_EQ(j["a"].how, "not re-run: the binary is gone");
}

}  // namespace
}  // namespace dlb::report

// bisect: which commit made a case slower. Drives `git bisect` in a temporary worktree of the
// repository (the user's working tree is never touched): each step builds, runs the one case with
// repetitions and judges it against the good and the bad endpoint with compare's U test and
// threshold; across the first bad commit, compare's kernel diff (kernel_diff.h). JudgeStep and the
// commands are pure (unit-tested); Bisect does the git and the processes (bisect_git.cpp).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/report/analyses/compare.h"
#include "tools/report/analyses/kernel_diff.h"
#include "tools/report/read/gbench_json.h"
#include "tools/report/render/document.h"

namespace dlb::report {

// Exit codes of `dlbench-report bisect` (1 stays bad input or usage, as for every subcommand).
inline constexpr int kBisectFound = 0;          // the first bad commit is named
inline constexpr int kBisectNotReproduced = 4;  // good vs bad is no significant slowdown
inline constexpr int kBisectUndecided = 5;      // skipped commits leave several candidates
inline constexpr int kBisectInterrupted = 130;  // SIGINT/SIGTERM/SIGHUP; the worktree is removed

struct BisectOptions {
  std::string good, bad, case_name;
  std::string source;    // a folder inside the repository; empty: the current directory
  std::string build;     // shell command in the worktree; empty: the README's build of the family
  std::string binary;    // relative to the worktree or absolute; empty: the family's binary
  std::string run;       // shell command instead of the binary; the benchmark flags are appended
  std::string work_dir;  // persistent: DIR/src the worktree (removed), DIR/build the build (kept)
  int repeats = 10;
  CompareOptions compare;          // threshold and alpha, as `compare`
  std::vector<std::string> extra;  // given after "--": appended to every run
  bool progress = true;            // a line per step on stderr
};

// A case name without what Google Benchmark appends ("/manual_time", "/real_time").
std::string CaseBaseName(const std::string& name);
// The family of a case: its name's first component ("gemm" of "gemm/cpu/onednn/...").
std::string CaseFamily(const std::string& name);
// --benchmark_filter that selects exactly the case: "^<name, regex-escaped>(/manual_time|...)?$".
std::string CaseFilter(const std::string& name);
// The command that bisects a case between two revisions (history check prints it). A revision
// `git describe --dirty` wrote loses its "-dirty".
std::string BisectCommand(const std::string& good, const std::string& bad,
                          const std::string& case_name);
std::string CleanRevision(const std::string& rev);
// history check's bisect cell for a step between runs of `before` and `after` (stored commits):
// the command, or why there is none (no revision recorded, the same commit on both sides).
std::string StepBisect(const std::string& before, const std::string& after,
                       const std::string& case_name);

enum class StepCall { kGood, kBad, kSkip };
const char* CallName(StepCall c);

// A step's repetitions against each endpoint's, with compare's rules (CompareOptions):
//  - not significantly slower than good and significantly faster than bad: good;
//  - significantly slower than good and not significantly faster than bad: bad;
//  - significantly between both, or within the threshold of both: by where its median lies on a
//    log scale from good (0) to bad (1): up to 1/3 good, from 2/3 bad, else skipped;
//  - significantly different from neither (noisy): skipped.
struct Judgement {
  StepCall call = StepCall::kSkip;
  std::string why;
  double position = 0;  // log(step/good) / log(bad/good) of the medians
  CompareRow vs_good, vs_bad;
};
Judgement JudgeStep(const Bench& good, const Bench& bad, const Bench& step,
                    const CompareOptions& options);
// One row: `now` against `base` as compare computes it (both measured).
CompareRow CompareOne(const Bench& base, const Bench& now, const CompareOptions& options);
// The smallest two-sided exact U-test p-value of n against n repetitions: 2 / C(2n, n).
double SmallestP(int n);

// What a bisection measured and decided.
struct BisectStep {
  std::string commit, subject;
  std::string role;  // "good", "bad" (the endpoints) or "step"
  bool measured = false;
  double median_ns = 0;
  double change = 0, p = 0;  // against the good endpoint
  double position = 0;
  size_t reps = 0;
  StepCall call = StepCall::kSkip;
  std::string note;
  std::optional<KernelTable> kernels;  // the case's kernel table in the run, where it has one
};
struct BisectResult {
  std::string case_name, good, bad;  // full hashes
  std::vector<BisectStep> steps;     // in the order measured
  std::string first_bad, first_bad_subject;
  std::vector<std::string> candidates;  // undecided: the commits the first bad one may be
  std::optional<KernelDiff> kernels;    // across the first bad commit, where both runs have tables
  std::string kernels_note;
  int exit_code = kBisectUndecided;
};

// Bad input (unknown revision, no repository, an endpoint that does not build or lacks the case)
// throws InputError; the regression not reproducing returns kBisectNotReproduced with the one
// line in `message`; an interrupt throws BisectInterrupted. The worktree and temporary files are
// gone in every case.
class BisectInterrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
BisectResult Bisect(const BisectOptions& options, std::string* message);
Document BisectDocument(const BisectResult& result, const BisectOptions& options);

}  // namespace dlb::report

// Autotuning: time an op's candidate implementations and keep the fastest. The op supplies the
// candidates and how to time one (CUDA events on its stream, or the steady clock: this header has
// no vendor include); a Policy says how hard to look; the Report says what happened and how long
// building and timing took, which the op turns into its label.
//
//   autotune::Tuner<Plan> tuner(policy, [&](Plan& p, int runs) { return TimeIt(p, runs); });
//   for (Plan& p : plans) tuner.Offer(NameOf(p), std::move(p));
//   Plan best = tuner.Finish();  // throws dlb::Error when none or every one failed
//   label += "fastest of " + std::to_string(tuner.report().usable());
#pragma once

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/error.h"

namespace dlb::autotune {

// One timing of `runs` runs of a candidate issued back to back.
struct Sample {
  double ms = 0;       // per run: the span of all of them over their count
  double host_ms = 0;  // host time spent issuing them (a GPU's enqueue time); 0 if not measured
};

// How candidates are timed; times in milliseconds. "best" is the fastest candidate so far.
struct Policy {
  enum class Score {
    kMinOfRuns,    // runs timed one at a time: a candidate's time is its fastest run
    kMeanOfBatch,  // runs timed together: a candidate's time is the batch's mean
  };

  // Launches before the scored ones (module loading, JIT, first touch of buffers).
  int warmup_runs = 1;
  // The first-launch rule: the first warm-up launch drops a candidate when its time, less its host
  // time (an upper bound on the idle gap before the work starts), is over first_launch_drop x best,
  // and only when that host time is at most first_launch_max_host_ms: more means the launch did
  // one-time work, so its time says nothing about the candidate. 0: the warm-up never drops.
  double first_launch_drop = 0;
  double first_launch_max_host_ms = 0;

  Score score = Score::kMinOfRuns;
  // kMinOfRuns: runs until at least min_runs of them and budget_ms of measured time, at most
  // max_runs. kMeanOfBatch: with a budget, a one-run probe sizes the batch to budget_ms (clamped to
  // min_runs..max_runs); without one, the batch is min_runs runs.
  double budget_ms = 0;
  int min_runs = 1;
  int max_runs = 1;
  // A candidate over drop_ratio x best ends early with the time it has (kMinOfRuns: checked after
  // every run; kMeanOfBatch: on its probe). 0: never.
  double drop_ratio = 0;

  // The retime_top fastest are timed again, each in one batch sized to retime_budget_ms (clamped
  // to retime_min_runs..retime_max_runs), and keep the faster of their two times, so that one
  // noisy sample does not decide. 0: no re-timing.
  int retime_top = 0;
  double retime_budget_ms = 0;
  int retime_min_runs = 1;
  int retime_max_runs = 1;
};

struct Report {
  int offered = 0;  // candidates offered
  int timed = 0;    // timed to a result, dropped ones included (0 when only one was offered)
  int dropped = 0;  // of those, ended early by the first-launch rule or the drop ratio
  int failed = 0;   // threw while being timed: skipped
  std::vector<std::string> failures;  // "name: what()" of each
  double build_ms = 0;                // from the tuner's construction to Finish(), less the timing
  double time_ms = 0;                 // spent timing
  double best_ms = 0;                 // the winner's time per run; 0 when nothing was timed
  std::string winner;                 // its name
  int winner_index = -1;              // its position in the order offered
  int usable() const { return offered - failed; }
};

using Clock = std::function<double()>;  // milliseconds, monotonic
double SteadyMs();

// Times `runs` calls of `once` with the steady clock: for work that is done when the call
// returns (CPU primitives).
template <class F>
Sample TimeOnHost(int runs, F&& once) {
  const double t0 = SteadyMs();
  for (int i = 0; i < runs; ++i) once();
  const double ms = SteadyMs() - t0;
  return {ms / runs, ms};
}

namespace detail {

using RunFn = std::function<Sample(int runs)>;
struct Outcome {
  double ms = 0;
  bool dropped = false;
};
// Warm-up and measurement of one candidate under the policy, against the best time so far.
Outcome Measure(const Policy& p, double best, const RunFn& run);
// The re-timing of a candidate that has `ms`: the faster of it and a new batch.
double Retime(const Policy& p, double ms, const RunFn& run);
// "all 3 candidates failed: a: why; b: why; c: why" (the first few named), or, when the ones
// that could win failed on re-timing, how many of how many.
std::string AllFailed(int offered, const std::vector<std::string>& failures);

}  // namespace detail

// Takes candidates one at a time and keeps the fastest. Nothing is timed while only one has been
// offered (there is nothing to choose); from the second on, each is timed as it arrives (the first
// along with the second), so a candidate that can no longer win is destroyed before the op builds
// the next one: at most max(1, retime_top) candidates are held besides the one being offered.
// A candidate whose timer throws is skipped, with its reason in the report.
template <class T>
class Tuner {
 public:
  using Timer = std::function<Sample(T& candidate, int runs)>;

  Tuner(Policy policy, Timer timer, Clock clock = SteadyMs)
      : policy_(policy), timer_(std::move(timer)), clock_(std::move(clock)), start_ms_(clock_()) {}

  void Offer(std::string name, T candidate) {
    DLB_REQUIRE(!finished_, "autotune: Offer after Finish");
    entries_.push_back({std::move(name), std::move(candidate)});
    ++report_.offered;
    if (entries_.size() == 2) Time(entries_[0]);
    if (entries_.size() >= 2) Time(entries_.back());
    Prune();
  }

  int offered() const { return report_.offered; }

  // The fastest candidate (the only one, untimed, when just one was offered), after the top ones
  // were re-timed. Throws dlb::Error when none was offered, or when every one failed (naming them).
  T Finish() {
    DLB_REQUIRE(!finished_, "autotune: Finish called twice");
    finished_ = true;
    if (entries_.empty()) throw Error("autotune: no candidate to choose from");
    Entry* winner = &entries_.front();
    if (entries_.size() > 1) {
      std::vector<Entry*> ranked = Ranked();
      const size_t top = std::min<size_t>(size_t(std::max(policy_.retime_top, 0)), ranked.size());
      for (size_t i = 0; i < top; ++i) Retime(*ranked[i]);
      winner = nullptr;
      for (Entry* e : Ranked()) {
        if (e->value) {
          winner = e;
          break;
        }
      }
      if (!winner) throw Error(detail::AllFailed(report_.offered, report_.failures));
      report_.best_ms = winner->ms;
    }
    report_.winner = winner->name;
    report_.winner_index = int(winner - entries_.data());
    const double total_ms = clock_() - start_ms_;
    report_.build_ms = std::max(0.0, total_ms - report_.time_ms);
    T out = std::move(*winner->value);
    entries_.clear();
    return out;
  }

  const Report& report() const { return report_; }

 private:
  struct Entry {
    std::string name;
    std::optional<T> value;  // reset once it cannot win
    double ms = std::numeric_limits<double>::infinity();
    bool timed = false;
    bool dropped = false;
    bool failed = false;
  };

  detail::RunFn RunOf(Entry& e) {
    return [this, &e](int runs) { return timer_(*e.value, runs); };
  }

  double Best() const {
    double best = std::numeric_limits<double>::infinity();
    for (const Entry& e : entries_)
      if (e.timed && !e.failed) best = std::min(best, e.ms);
    return best;
  }

  void Time(Entry& e) {
    const double t0 = clock_();
    try {
      const detail::Outcome o = detail::Measure(policy_, Best(), RunOf(e));
      e.ms = o.ms;
      e.timed = true;
      e.dropped = o.dropped;
      ++report_.timed;
      if (o.dropped) ++report_.dropped;
    } catch (const std::exception& ex) {
      Fail(e, ex);
    }
    report_.time_ms += clock_() - t0;
  }

  void Retime(Entry& e) {
    const double t0 = clock_();
    try {
      e.ms = detail::Retime(policy_, e.ms, RunOf(e));
    } catch (const std::exception& ex) {
      --report_.timed;  // counted as failed instead
      if (e.dropped) --report_.dropped;
      Fail(e, ex);
    }
    report_.time_ms += clock_() - t0;
  }

  void Fail(Entry& e, const std::exception& ex) {
    e.failed = true;
    e.value.reset();
    ++report_.failed;
    report_.failures.push_back(e.name + ": " + ex.what());
  }

  // Timed candidates that did not fail, fastest first; ties go to the one offered first.
  std::vector<Entry*> Ranked() {
    std::vector<Entry*> out;
    for (Entry& e : entries_)
      if (e.timed && !e.failed) out.push_back(&e);
    std::stable_sort(out.begin(), out.end(),
                     [](const Entry* a, const Entry* b) { return a->ms < b->ms; });
    return out;
  }

  // Times do not change before re-timing and a new candidate only pushes others down, so one
  // outside the top max(1, retime_top) now can neither be re-timed nor win: it is destroyed at
  // once.
  void Prune() {
    if (entries_.size() < 2) return;
    const std::vector<Entry*> ranked = Ranked();
    const size_t keep = size_t(std::max(policy_.retime_top, 1));
    for (size_t i = keep; i < ranked.size(); ++i) ranked[i]->value.reset();
  }

  Policy policy_;
  Timer timer_;
  Clock clock_;
  double start_ms_;
  std::vector<Entry> entries_;
  Report report_;
  bool finished_ = false;
};

}  // namespace dlb::autotune

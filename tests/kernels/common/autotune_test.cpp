#include "kernels/common/autotune.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/error.h"

namespace dlb::autotune {
namespace {

// Fake candidates on a fake clock: a timing of `runs` runs advances the clock by runs x the
// candidate's time for that call, so every count and phase time below is exact.
struct Fake {
  std::string name;
  std::vector<double> ms;  // per timer call; the last one repeats
  double host_ms = 0;      // host time the first launch reports
  int throw_at_call = -1;  // this call throws (0: the first)
  int calls = 0;
};

struct Bench {
  double now = 0;
  std::vector<std::pair<std::string, int>> log;  // (candidate, runs) of every timer call
  int alive = 0;                                 // Fake values the tuner holds

  Clock clock() {
    return [this] { return now; };
  }
  Tuner<Fake>::Timer timer() {
    return [this](Fake& f, int runs) {
      const int call = f.calls++;
      log.emplace_back(f.name, runs);
      if (call == f.throw_at_call) throw Error("launch failed in " + f.name);
      const double ms = f.ms[std::min(size_t(call), f.ms.size() - 1)];
      now += ms * runs;
      return Sample{ms, call == 0 ? f.host_ms : 0.0};
    };
  }
  // Runs per timer call of one candidate, in order.
  std::vector<int> RunsOf(const std::string& name) const {
    std::vector<int> out;
    for (const auto& [n, runs] : log)
      if (n == name) out.push_back(runs);
    return out;
  }
};

// One warm-up run, then runs scored as `score` within the limits given; the rest as Policy has it.
Policy Scoring(Policy::Score score, int min_runs, int max_runs, double budget_ms = 0,
               double drop_ratio = 0) {
  Policy p;
  p.warmup_runs = 1;
  p.score = score;
  p.min_runs = min_runs;
  p.max_runs = max_runs;
  p.budget_ms = budget_ms;
  p.drop_ratio = drop_ratio;
  return p;
}

// A tuner on a fake clock: each timing advances it by runs x the time `sample` reports.
template <class T, class SampleFn>
Tuner<T> OnFakeClock(const Policy& p, double* now, SampleFn sample) {
  return Tuner<T>(
      p,
      [now, sample](T& c, int runs) {
        const Sample s = sample(c, runs);
        *now += s.ms * runs;
        return s;
      },
      [now] { return *now; });
}

// The cuDNN engine search's rules (kernels/cudnn/conv.cpp).
Policy CudnnLike() {
  Policy p = Scoring(Policy::Score::kMeanOfBatch, 2, 50, 0.5, 2.0);
  p.first_launch_drop = 3.0;
  p.first_launch_max_host_ms = 0.1;
  p.retime_top = 3;
  p.retime_budget_ms = 3.0;
  p.retime_min_runs = 3;
  p.retime_max_runs = 100;
  return p;
}

// The oneDNN convolution search's rules (kernels/onednn/conv.cpp).
Policy OneDnnConvLike() { return Scoring(Policy::Score::kMinOfRuns, 2, 50, 10, 1.3); }

Fake F(std::string name, std::vector<double> ms, double host_ms = 0) {
  return {std::move(name), std::move(ms), host_ms};
}

// A candidate whose timer call `at_call` throws (0: the first).
Fake Failing(std::string name, std::vector<double> ms, int at_call) {
  Fake f = F(std::move(name), std::move(ms));
  f.throw_at_call = at_call;
  return f;
}

TEST(Autotune, KeepsTheFastestAndSaysWhichItWas) {
  Bench b;
  Tuner<Fake> t(OneDnnConvLike(), b.timer(), b.clock());
  t.Offer("a", F("a", {3}));
  t.Offer("b", F("b", {1}));
  t.Offer("c", F("c", {2}));
  EXPECT_EQ(t.Finish().name, "b");
  const Report& r = t.report();
  EXPECT_EQ(r.winner, "b");
  EXPECT_EQ(r.winner_index, 1);
  EXPECT_EQ(r.best_ms, 1);
  EXPECT_EQ(r.offered, 3);
  EXPECT_EQ(r.timed, 3);
  EXPECT_EQ(r.usable(), 3);
}

TEST(Autotune, TiesGoToTheCandidateOfferedFirst) {
  Bench b;
  Tuner<Fake> t(OneDnnConvLike(), b.timer(), b.clock());
  t.Offer("a", F("a", {2}));
  t.Offer("b", F("b", {2}));
  EXPECT_EQ(t.Finish().name, "a");
}

TEST(Autotune, NothingToChooseFromIsAnError) {
  Bench b;
  Tuner<Fake> t(CudnnLike(), b.timer(), b.clock());
  EXPECT_EQ(t.offered(), 0);
  EXPECT_THROW(t.Finish(), Error);
}

TEST(Autotune, ALoneCandidateIsKeptUntimed) {
  Bench b;
  Tuner<Fake> t(CudnnLike(), b.timer(), b.clock());
  b.now = 7;  // building it
  t.Offer("only", F("only", {1}));
  EXPECT_EQ(t.Finish().name, "only");
  EXPECT_TRUE(b.log.empty());
  const Report& r = t.report();
  EXPECT_EQ(r.offered, 1);
  EXPECT_EQ(r.timed, 0);
  EXPECT_EQ(r.best_ms, 0);
  EXPECT_EQ(r.winner_index, 0);
  EXPECT_EQ(r.build_ms, 7);
  EXPECT_EQ(r.time_ms, 0);
}

// The first candidate waits until a second one makes timing worth it, then both are timed.
TEST(Autotune, TheFirstCandidateIsTimedWhenASecondArrives) {
  Bench b;
  Tuner<Fake> t(OneDnnConvLike(), b.timer(), b.clock());
  t.Offer("a", F("a", {4}));
  EXPECT_TRUE(b.log.empty());
  t.Offer("b", F("b", {5}));
  ASSERT_FALSE(b.log.empty());
  EXPECT_EQ(b.log.front().first, "a");
  EXPECT_EQ(b.log.back().first, "b");
}

// The cuDNN rule: the first launch drops a candidate only when, less its host time, it took over
// 3x the best and its host time shows no one-time work (<= 0.1 ms).
TEST(Autotune, FirstLaunchDropsOnlyAClearlySlowCandidate) {
  Bench b;
  Policy p = CudnnLike();
  p.retime_top = 0;  // only the first-launch rule here
  Tuner<Fake> t(p, b.timer(), b.clock());
  t.Offer("best", F("best", {1}));
  t.Offer("slow", F("slow", {4}, 0.05));                 // 3.95 > 3: dropped
  t.Offer("loaded", F("loaded", {4, 1.5}, 0.5));         // one-time work: warm launch decides
  t.Offer("enqueue", F("enqueue", {3.05, 1.25}, 0.09));  // 2.96 after its enqueue: kept
  t.Offer("probe", F("probe", {1.5, 2.5}, 0.05));        // warm probe over 2x: ends there
  EXPECT_EQ(t.Finish().name, "best");
  // best: first launch, probe, a batch of 0.5 ms / 1 ms -> 2 runs (at least 2).
  EXPECT_EQ(b.RunsOf("best"), (std::vector<int>{1, 1, 2}));
  EXPECT_EQ(b.RunsOf("slow"), (std::vector<int>{1}));
  EXPECT_EQ(b.RunsOf("loaded"), (std::vector<int>{1, 1, 2}));
  EXPECT_EQ(b.RunsOf("enqueue"), (std::vector<int>{1, 1, 2}));
  EXPECT_EQ(b.RunsOf("probe"), (std::vector<int>{1, 1}));
  const Report& r = t.report();
  EXPECT_EQ(r.timed, 5);
  EXPECT_EQ(r.dropped, 2);
  EXPECT_EQ(r.failed, 0);
}

// Against no best yet, nothing is dropped, however slow; a fast probe asks for a bigger batch.
TEST(Autotune, BatchesAreSizedToTheBudget) {
  Bench b;
  Policy p = CudnnLike();
  p.retime_top = 0;
  Tuner<Fake> t(p, b.timer(), b.clock());
  t.Offer("slow", F("slow", {100}));
  t.Offer("fast", F("fast", {0.125}));
  t.Offer("tiny", F("tiny", {0.0001}));
  EXPECT_EQ(t.Finish().name, "tiny");
  EXPECT_EQ(b.RunsOf("slow"), (std::vector<int>{1, 1, 2}));
  EXPECT_EQ(b.RunsOf("fast"), (std::vector<int>{1, 1, 4}));
  EXPECT_EQ(b.RunsOf("tiny"), (std::vector<int>{1, 1, 50}));
}

// The top 3 (dropped candidates included, as they rank) are timed again for ~3 ms and keep the
// faster of their two times: the re-timing can change the winner.
TEST(Autotune, RetimesTheTopKAndKeepsTheFasterTime) {
  Bench b;
  Tuner<Fake> t(CudnnLike(), b.timer(), b.clock());
  t.Offer("a", F("a", {1.0, 1.0, 1.0, 1.0}));
  t.Offer("b", F("b", {1.25, 1.25, 1.25, 0.5}));  // faster when re-timed
  t.Offer("c", F("c", {1.5}));
  t.Offer("d", F("d", {2.0}));  // fourth: never re-timed
  EXPECT_EQ(t.Finish().name, "b");
  EXPECT_EQ(b.RunsOf("a"), (std::vector<int>{1, 1, 2, 3}));
  EXPECT_EQ(b.RunsOf("b"), (std::vector<int>{1, 1, 2, 3}));
  EXPECT_EQ(b.RunsOf("c"), (std::vector<int>{1, 1, 2, 3}));
  EXPECT_EQ(b.RunsOf("d"), (std::vector<int>{1, 1, 2}));
  EXPECT_EQ(t.report().best_ms, 0.5);
}

TEST(Autotune, RetimingNeverMakesACandidateSlower) {
  Bench b;
  Tuner<Fake> t(CudnnLike(), b.timer(), b.clock());
  t.Offer("a", F("a", {1.0, 1.0, 1.0, 4.0}));
  t.Offer("b", F("b", {1.5}));
  EXPECT_EQ(t.Finish().name, "a");
  EXPECT_EQ(t.report().best_ms, 1.0);
}

// Min of single runs: at least 2 runs and 10 ms, at most 50; a run over 1.3x the best ends it.
TEST(Autotune, MinOfRunsStopsAtItsBudgetOrWhenClearlySlower) {
  Bench b;
  Tuner<Fake> t(OneDnnConvLike(), b.timer(), b.clock());
  t.Offer("one", F("one", {1}));
  t.Offer("six", F("six", {6}));
  t.Offer("close", F("close", {1, 0.875, 0.5}));  // within 1.3x on its first run: timed on
  t.Offer("tenth", F("tenth", {0.1}));
  EXPECT_EQ(t.Finish().name, "tenth");
  EXPECT_EQ(b.RunsOf("one").size(), 1u + 10u);    // warm-up, then 10 ms at 1 ms
  EXPECT_EQ(b.RunsOf("six").size(), 1u + 1u);     // 6 > 1.3 x 1
  EXPECT_EQ(b.RunsOf("close").size(), 1u + 20u);  // 0.875, then 0.5s up to 10 ms
  EXPECT_EQ(b.RunsOf("tenth").size(), 1u + 50u);  // capped at 50 runs
  const Report& r = t.report();
  EXPECT_EQ(r.best_ms, 0.1);
  EXPECT_EQ(r.dropped, 1);
}

TEST(Autotune, MeanOfAFixedBatchWithoutABudget) {
  Bench b;
  Tuner<Fake> t(Scoring(Policy::Score::kMeanOfBatch, 3, 3), b.timer(), b.clock());
  t.Offer("a", F("a", {2}));
  t.Offer("b", F("b", {1}));
  EXPECT_EQ(t.Finish().name, "b");
  EXPECT_EQ(b.RunsOf("a"), (std::vector<int>{1, 3}));
  EXPECT_EQ(b.RunsOf("b"), (std::vector<int>{1, 3}));
}

TEST(Autotune, ReportsBuildAndTimingTimeApart) {
  Bench b;
  Tuner<Fake> t(Scoring(Policy::Score::kMeanOfBatch, 3, 3), b.timer(), b.clock());
  b.now += 5;  // building a
  t.Offer("a", F("a", {2}));
  b.now += 3;  // building b; then a (1 + 3 runs of 2 ms) and b (1 + 3 of 1 ms) are timed
  t.Offer("b", F("b", {1}));
  b.now += 1;  // after the last offer, before Finish
  t.Finish();
  const Report& r = t.report();
  EXPECT_DOUBLE_EQ(r.time_ms, 8 + 4);
  EXPECT_DOUBLE_EQ(r.build_ms, 5 + 3 + 1);
}

TEST(Autotune, ACandidateThatThrowsIsSkippedWithItsReason) {
  Bench b;
  Tuner<Fake> t(CudnnLike(), b.timer(), b.clock());
  t.Offer("a", F("a", {1}));
  t.Offer("bad", Failing("bad", {0.25}, 1));  // its warm probe
  t.Offer("c", F("c", {0.5}));
  EXPECT_EQ(t.Finish().name, "c");
  const Report& r = t.report();
  EXPECT_EQ(r.offered, 3);
  EXPECT_EQ(r.failed, 1);
  EXPECT_EQ(r.usable(), 2);
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0], "bad: launch failed in bad");
  EXPECT_EQ(r.winner_index, 2);
}

TEST(Autotune, EveryCandidateFailingIsAnErrorNamingThem) {
  Bench b;
  Tuner<Fake> t(OneDnnConvLike(), b.timer(), b.clock());
  for (const char* name : {"x", "y"}) t.Offer(name, Failing(name, {1}, 0));
  try {
    t.Finish();
    FAIL() << "no candidate ran, yet one was chosen";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("all 2 candidates failed"), std::string::npos) << what;
    EXPECT_NE(what.find("x: launch failed in x"), std::string::npos) << what;
    EXPECT_NE(what.find("y: launch failed in y"), std::string::npos) << what;
  }
}

// A candidate failing on re-timing is skipped like one failing earlier: the next fastest wins.
TEST(Autotune, ACandidateFailingOnRetimingLeavesTheNextFastest) {
  Bench b;
  Tuner<Fake> t(CudnnLike(), b.timer(), b.clock());
  t.Offer("a", Failing("a", {1}, 3));  // first launch, probe, batch, then the re-timing
  t.Offer("b", F("b", {1.5}));
  EXPECT_EQ(t.Finish().name, "b");
  const Report& r = t.report();
  EXPECT_EQ(r.failed, 1);
  EXPECT_EQ(r.timed, 1);
  EXPECT_EQ(r.best_ms, 1.5);
}

// A candidate that can no longer win is destroyed before the next one is offered, so an op never
// holds more than the ones that may still win (its memory, a batch's tensors, goes back).
struct Counted {
  Counted(int* alive, double ms) : alive(alive), ms(ms) { ++*alive; }
  Counted(Counted&& o) noexcept : alive(o.alive), ms(o.ms) { ++*alive; }
  Counted(const Counted&) = delete;
  ~Counted() { --*alive; }
  int* alive;
  double ms;
};

TEST(Autotune, HoldsOnlyTheCandidatesThatCanStillWin) {
  for (int retime_top : {0, 2}) {
    int alive = 0;
    double now = 0;
    Policy p = OneDnnConvLike();
    p.retime_top = retime_top;
    p.retime_min_runs = p.retime_max_runs = 1;
    auto t = OnFakeClock<Counted>(p, &now, [](Counted& c, int) { return Sample{c.ms, 0}; });
    const size_t keep = size_t(std::max(retime_top, 1));
    for (double ms : {5.0, 4.0, 6.0, 3.0, 7.0}) {
      t.Offer("c", Counted(&alive, ms));
      if (t.offered() >= 2) EXPECT_LE(size_t(alive), keep) << "retime_top " << retime_top;
    }
    Counted best = t.Finish();
    EXPECT_EQ(best.ms, 3.0);
    EXPECT_EQ(alive, 1);  // only the one returned
  }
}

TEST(Autotune, FinishTwiceOrOfferAfterFinishIsAnError) {
  Bench b;
  Tuner<Fake> t(CudnnLike(), b.timer(), b.clock());
  t.Offer("a", F("a", {1}));
  t.Finish();
  EXPECT_THROW(t.Finish(), Error);
  EXPECT_THROW(t.Offer("b", F("b", {1})), Error);
}

// ---- The four searches as the ops wrote them before the tuner, on the fake clock ----
// Each transcription keeps its op's loop as it was; the tuner, given the op's policy, must make
// the same timer calls in the same order and keep the same candidate, for random candidate sets.

using TimeFn = std::function<Sample(size_t candidate, int runs)>;

// Per call, a candidate's time scatters by up to +-20% around its own cost; its first call may
// carry one-time work, which then shows in the host time too. Values depend only on (candidate,
// call), so two searches that make the same calls see the same times.
struct RandomSet {
  std::vector<double> cost, one_time, host;
  std::vector<int> calls;
  std::vector<std::pair<size_t, int>> log;
  uint64_t salt = 0;

  RandomSet(std::mt19937_64& rng, size_t n, double lo_ms, double hi_ms) {
    std::uniform_real_distribution<double> u(0, 1);
    for (size_t i = 0; i < n; ++i) {
      cost.push_back(lo_ms * std::pow(hi_ms / lo_ms, u(rng)));
      const bool loads = u(rng) < 0.3;
      one_time.push_back(loads ? 0.5 + 20 * u(rng) : 0);
      host.push_back(loads ? 0.2 + one_time.back() : 0.005 + 0.09 * u(rng));
    }
    calls.assign(n, 0);
    salt = rng();
  }
  Sample Time(size_t i, int runs) {
    const int call = calls[i]++;
    log.emplace_back(i, runs);
    std::mt19937_64 g(salt + 0x9e3779b97f4a7c15ull * (uint64_t(i) * 65536 + uint64_t(call)));
    const double per_run = cost[i] * (0.8 + 0.4 * std::uniform_real_distribution<double>(0, 1)(g));
    if (call == 0) return {per_run + one_time[i] / runs, host[i]};
    return {per_run, 0.005};
  }
  void Reset() {
    calls.assign(cost.size(), 0);
    log.clear();
  }
};

size_t CudnnAsWritten(size_t n, const TimeFn& time) {
  struct C {
    size_t i;
    double ms;
  };
  std::vector<C> cands;
  double best = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < n; ++i) {
    C c{i, 0};
    const Sample cold = time(i, 1);
    if (cold.host_ms <= 0.1 && cold.ms - cold.host_ms > 3.0 * best) {
      c.ms = cold.ms;
      cands.push_back(c);
      continue;
    }
    const double once = time(i, 1).ms;
    if (once > 2.0 * best) {
      c.ms = once;
      cands.push_back(c);
      continue;
    }
    const int reps = std::clamp(int(0.5 / std::max(once, 1e-3)), 2, 50);
    c.ms = time(i, reps).ms;
    best = std::min(best, c.ms);
    cands.push_back(c);
  }
  const auto faster = [](const C& a, const C& b) { return a.ms < b.ms; };
  std::stable_sort(cands.begin(), cands.end(), faster);
  const size_t top = std::min<size_t>(3, cands.size());
  for (size_t k = 0; k < top; ++k) {
    const int reps = std::clamp(int(3.0 / std::max(cands[k].ms, 1e-3)), 3, 100);
    cands[k].ms = std::min(cands[k].ms, time(cands[k].i, reps).ms);
  }
  std::stable_sort(cands.begin(), cands.begin() + top, faster);
  return cands.front().i;
}

size_t OneDnnConvAsWritten(size_t n, const TimeFn& time) {
  double best = std::numeric_limits<double>::infinity();
  int timed = 0;
  const auto measure = [&](size_t i) {
    ++timed;
    time(i, 1);
    double t = time(i, 1).ms, spent = t;
    for (int run = 1; t <= 1.3 * best && (run < 2 || spent < 10) && run < 50; ++run) {
      const double once = time(i, 1).ms;
      t = std::min(t, once);
      spent += once;
    }
    return t;
  };
  int kept = -1;
  for (size_t i = 0; i < n; ++i) {
    if (kept >= 0) {
      if (timed == 0) best = measure(size_t(kept));
      const double t = measure(i);
      if (t >= best) continue;
      best = t;
    }
    kept = int(i);
  }
  return size_t(kept);
}

size_t OneDnnMatmulAsWritten(size_t n, const TimeFn& time) {
  int candidates = 0;
  double best = 0;
  size_t chosen = 0;
  for (size_t i = 0; i < n; ++i) {
    time(i, 1);
    double t = 0, spent = 0;
    for (int run = 0; run < 3 || spent < 50; ++run) {
      const double once = time(i, 1).ms;
      t = run == 0 ? once : std::min(t, once);
      spent += once;
    }
    if (candidates++ == 0 || t < best) best = t, chosen = i;
  }
  return chosen;
}

size_t CublasLtAsWritten(size_t n, const TimeFn& time) {
  double best = 0;
  size_t chosen = 0;
  for (size_t i = 0; i < n; ++i) {
    time(i, 1);
    const double t = time(i, 3).ms;
    if (i == 0 || t < best) best = t, chosen = i;
  }
  return chosen;
}

// The policies the ops set (kernels/onednn/matmul.cpp, kernels/cublas/gemm.cpp).
Policy OneDnnMatmulLike() {
  return Scoring(Policy::Score::kMinOfRuns, 3, std::numeric_limits<int>::max(), 50);
}
Policy CublasLtLike() { return Scoring(Policy::Score::kMeanOfBatch, 3, 3); }

void ExpectSameSearch(const char* what, const Policy& policy,
                      size_t (*as_written)(size_t, const TimeFn&), double lo_ms, double hi_ms,
                      int trials) {
  std::mt19937_64 rng(20261122);
  for (int trial = 0; trial < trials; ++trial) {
    RandomSet set(rng, 2 + rng() % 11, lo_ms, hi_ms);
    const size_t want =
        as_written(set.cost.size(), [&](size_t i, int runs) { return set.Time(i, runs); });
    const auto want_log = set.log;
    set.Reset();
    double now = 0;
    auto t =
        OnFakeClock<size_t>(policy, &now, [&](size_t i, int runs) { return set.Time(i, runs); });
    for (size_t i = 0; i < set.cost.size(); ++i) t.Offer(std::to_string(i), i);
    ASSERT_EQ(t.Finish(), want) << what << " trial " << trial;
    ASSERT_EQ(set.log, want_log) << what << " trial " << trial;
  }
}

TEST(AutotuneKeepsTheOpsRules, CudnnEngineSearch) {
  ExpectSameSearch("cudnn", CudnnLike(), CudnnAsWritten, 0.0005, 20, 2000);
}
TEST(AutotuneKeepsTheOpsRules, OneDnnConvLayoutSearch) {
  ExpectSameSearch("onednn conv", OneDnnConvLike(), OneDnnConvAsWritten, 0.01, 20, 2000);
}
TEST(AutotuneKeepsTheOpsRules, OneDnnMatmulSearch) {
  ExpectSameSearch("onednn matmul", OneDnnMatmulLike(), OneDnnMatmulAsWritten, 0.5, 20, 300);
}
TEST(AutotuneKeepsTheOpsRules, CublasLtHeuristicResultsSearch) {
  ExpectSameSearch("cublaslt", CublasLtLike(), CublasLtAsWritten, 0.001, 20, 2000);
}

TEST(Autotune, TimeOnHostTimesEveryCall) {
  int calls = 0;
  const Sample s = TimeOnHost(3, [&] { ++calls; });
  EXPECT_EQ(calls, 3);
  EXPECT_GE(s.ms, 0);
}

}  // namespace
}  // namespace dlb::autotune

// The watchdog's deadline logic without a GPU: the deadline from a timeout, the poll loop ending
// by it (a fake clock), on completion or on failure, and the one line a case fails with.
#include "kernels/nccl/watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace dlb::nccl {
namespace {

using std::chrono::seconds;

TEST(WatchdogTest, DeadlineIsNowPlusTheTimeoutAndNoneForZeroOrNegative) {
  const Clock::time_point now = Clock::now();
  EXPECT_EQ(DeadlineAfter(300, now) - now,
            std::chrono::duration_cast<Clock::duration>(seconds(300)));
  EXPECT_EQ(DeadlineAfter(0.5, now) - now,
            std::chrono::duration_cast<Clock::duration>(std::chrono::milliseconds(500)));
  EXPECT_EQ(DeadlineAfter(0, now), Clock::time_point::max());
  EXPECT_EQ(DeadlineAfter(-1, now), Clock::time_point::max());
  EXPECT_EQ(DeadlineAfter(1.0 / 0.0, now), Clock::time_point::max());
  // A huge timeout is years away, never an overflow into the past.
  EXPECT_GT(DeadlineAfter(1e300, now), now + std::chrono::hours(24 * 365));
}

TEST(WatchdogTest, TimeoutMessageNamesTheOperationTheRankAndTheAbort) {
  EXPECT_EQ(
      TimeoutMessage("comm/gpu/nccl/all_reduce.1048576/dt:bf16/gpus:2: all_reduce 1048576 B bf16",
                     1, 300),
      "comm timeout: comm/gpu/nccl/all_reduce.1048576/dt:bf16/gpus:2: all_reduce 1048576 B "
      "bf16 on rank 1 did not finish in 300 s; communicator aborted");
  EXPECT_EQ(TimeoutMessage("init of rank 0 of 2", 0, 2.5),
            "comm timeout: init of rank 0 of 2 on rank 0 did not finish in 2.5 s; communicator "
            "aborted");
}

// A clock that advances one second per look, so that the test takes no real time.
struct FakeClock {
  Clock::time_point t = Clock::time_point() + seconds(1000);
  int looks = 0;
  Clock::time_point operator()() {
    ++looks;
    t += seconds(1);
    return t;
  }
};

TEST(WatchdogTest, PollEndsAtTheDeadlineWhenTheWorkNeverFinishes) {
  FakeClock clock;
  const Clock::time_point deadline = clock.t + seconds(10);
  int probes = 0;
  const Probe p = PollUntil(
      [&] {
        ++probes;
        return Probe::kPending;
      },
      deadline, [&] { return clock(); });
  EXPECT_EQ(p, Probe::kPending);
  EXPECT_GE(clock.t, deadline);
  EXPECT_EQ(probes, 10);  // one probe per look, and none after the deadline
}

TEST(WatchdogTest, PollReturnsAsSoonAsTheWorkIsDoneOrFailed) {
  for (Probe end : {Probe::kDone, Probe::kFailed}) {
    FakeClock clock;
    int probes = 0;
    const Probe p = PollUntil([&] { return ++probes == 3 ? end : Probe::kPending; },
                              clock.t + seconds(100), [&] { return clock(); });
    EXPECT_EQ(p, end);
    EXPECT_EQ(probes, 3);
  }
}

TEST(WatchdogTest, WorkDoneOnTheFirstLookIsNeverTimedOut) {
  // A deadline already past still lets a finished wait succeed: the probe comes first.
  FakeClock clock;
  EXPECT_EQ(PollUntil([] { return Probe::kDone; }, clock.t - seconds(5), [&] { return clock(); }),
            Probe::kDone);
}

TEST(WatchdogTest, RealClockPollEndsCloseToTheDeadline) {
  const auto start = Clock::now();
  const Probe p = PollUntil([] { return Probe::kPending; }, DeadlineAfter(0.05));
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(p, Probe::kPending);
  EXPECT_GE(took, 0.05);
  EXPECT_LT(took, 5.0);  // a bound on a hang, not a timing assertion
}

TEST(WatchdogTest, ArmedCallbackRunsOnceItsDeadlinePassesAndDisarmSaysSo) {
  Watchdog dog;
  std::atomic<int> ran{0};
  const auto armed_at = Clock::now();
  const uint64_t t = dog.Arm(armed_at + std::chrono::milliseconds(50), [&] { ++ran; });
  while (ran.load() == 0 && Clock::now() - armed_at < seconds(30))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(ran.load(), 1);
  EXPECT_GE(Clock::now() - armed_at, std::chrono::milliseconds(50));
  EXPECT_TRUE(dog.Disarm(t));
  EXPECT_EQ(ran.load(), 1);
}

TEST(WatchdogTest, DisarmedInTimeTheCallbackNeverRuns) {
  Watchdog dog;
  std::atomic<int> ran{0};
  {
    Armed a(dog, Clock::now() + seconds(30), [&] { ++ran; });
    EXPECT_FALSE(a.Disarm());
  }
  // A later, earlier deadline still fires: the thread follows the earliest armed one.
  const uint64_t never = dog.Arm(Clock::time_point::max(), [&] { ran += 100; });
  const uint64_t soon = dog.Arm(Clock::now() + std::chrono::milliseconds(10), [&] { ++ran; });
  const auto start = Clock::now();
  while (ran.load() == 0 && Clock::now() - start < seconds(30))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(dog.Disarm(soon));
  EXPECT_FALSE(dog.Disarm(never));
  EXPECT_EQ(ran.load(), 1);
}

TEST(WatchdogTest, DisarmWaitsForACallbackStillRunning) {
  Watchdog dog;
  std::atomic<bool> started{false}, finished{false};
  const uint64_t t = dog.Arm(Clock::now(), [&] {
    started = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    finished = true;
  });
  const auto start = Clock::now();
  while (!started.load() && Clock::now() - start < seconds(30))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(started.load());
  EXPECT_TRUE(dog.Disarm(t));
  EXPECT_TRUE(finished.load());  // the abort is complete once Disarm says it fired
}

}  // namespace
}  // namespace dlb::nccl

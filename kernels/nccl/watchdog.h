// The deadline logic of the NCCL watchdog, free of NCCL and CUDA headers so that it is tested on
// any machine: a deadline from a timeout in seconds, a poll loop that ends by it, and the one-line
// message a case fails with. kernels/nccl/comm.h applies it to communicators.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "kernels/common/error.h"

namespace dlb::nccl {

using Clock = std::chrono::steady_clock;

// --dlb_comm_timeout's default: generous, so that only a hang reaches it (the largest collective
// of the full tier takes well under a second; a communicator's first init over several hosts can
// take tens of seconds).
constexpr double kDefaultTimeoutSeconds = 300;

// Thrown when a communicator's init, a collective or a whole step passes its deadline; the
// communicator is aborted by then. what() is the one line the case fails with.
class CommTimeout : public Error {
 public:
  using Error::Error;
};

// Thrown when NCCL reports an asynchronous error (a peer that went away, a network failure); the
// communicator is aborted by then.
class CommFailed : public Error {
 public:
  using Error::Error;
};

// now + seconds; seconds <= 0 (or not finite) means no deadline: Clock::time_point::max().
Clock::time_point DeadlineAfter(double seconds, Clock::time_point now = Clock::now());

// "comm timeout: all_reduce 1048576 B bf16 on rank 1 did not finish in 300 s; communicator
// aborted". `what` names the operation (and the case, where the caller knows it).
std::string TimeoutMessage(const std::string& what, int rank, double seconds);

// What one look at the awaited work found.
enum class Probe { kDone, kPending, kFailed };

// Calls `probe` until it says kDone or kFailed (returned) or `now()` passes `deadline` (kPending
// returned: the caller aborts). The first millisecond polls back to back, so that a wait the
// harness already had costs no added latency; after that it sleeps 20 us between polls, so that a
// long step (or a hang) does not hold a core at 100%.
Probe PollUntil(const std::function<Probe()>& probe, Clock::time_point deadline,
                const std::function<Clock::time_point()>& now = Clock::now);

// Runs a callback once its deadline passes while it is armed, on a thread of its own: the bound on
// a call that blocks the caller's thread with no deadline of its own (a blocking NCCL enqueue or
// stream synchronization waiting for a peer that stopped answering). As PyTorch's NCCL watchdog,
// the callback aborts the communicators, which makes the blocked call return with an error.
// Arming and disarming take a mutex and no system call, so a timed span can afford one pair.
class Watchdog {
 public:
  Watchdog() = default;
  ~Watchdog();  // ends the thread; callbacks still armed never run
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // `on_expiry` runs once, on the watchdog's thread, when `deadline` passes before Disarm(token).
  // A deadline of Clock::time_point::max() never expires.
  uint64_t Arm(Clock::time_point deadline, std::function<void()> on_expiry);
  // Disarms `token`: true when its callback ran (waits for a callback still running to return).
  bool Disarm(uint64_t token);

  // The process's watchdog, its thread started on first use.
  static Watchdog& Process();

 private:
  struct Entry {
    Clock::time_point deadline;
    std::function<void()> on_expiry;
  };
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Entry> armed_;
  uint64_t next_ = 1;
  uint64_t running_ = 0;            // the token whose callback runs now
  std::map<uint64_t, bool> fired_;  // tokens whose callback ran, until disarmed
  bool stop_ = false;
  std::thread thread_;
};

// Arms `dog` for the scope: Armed a(dog, deadline, abort); ... ; a.Fired() after the blocking part.
class Armed {
 public:
  Armed(Watchdog& dog, Clock::time_point deadline, std::function<void()> on_expiry)
      : dog_(dog), token_(dog.Arm(deadline, std::move(on_expiry))) {}
  ~Armed() { Disarm(); }
  Armed(const Armed&) = delete;
  Armed& operator=(const Armed&) = delete;
  // Disarms now: whether the callback ran.
  bool Disarm() {
    if (token_ != 0) fired_ = dog_.Disarm(token_);
    token_ = 0;
    return fired_;
  }

 private:
  Watchdog& dog_;
  uint64_t token_;
  bool fired_ = false;
};

}  // namespace dlb::nccl

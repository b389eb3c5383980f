// The deadline logic of the NCCL watchdog, free of NCCL and CUDA headers so that it is tested on
// any machine: a deadline from a timeout in seconds, a poll loop that ends by it, and the one-line
// message a case fails with. kernels/nccl/comm.h applies it to communicators.
#pragma once

#include <chrono>
#include <functional>
#include <string>

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

}  // namespace dlb::nccl

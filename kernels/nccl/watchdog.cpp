#include "kernels/nccl/watchdog.h"

#include <cmath>
#include <sstream>
#include <thread>

namespace dlb::nccl {

Clock::time_point DeadlineAfter(double seconds, Clock::time_point now) {
  if (!(seconds > 0) || !std::isfinite(seconds)) return Clock::time_point::max();
  const auto left = Clock::time_point::max() - now;
  const auto span = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::min(seconds, 1e9)));
  return span >= left ? Clock::time_point::max() : now + span;
}

std::string TimeoutMessage(const std::string& what, int rank, double seconds) {
  std::ostringstream s;
  s << "comm timeout: " << what << " on rank " << rank << " did not finish in " << seconds
    << " s; communicator aborted";
  return s.str();
}

Probe PollUntil(const std::function<Probe()>& probe, Clock::time_point deadline,
                const std::function<Clock::time_point()>& now) {
  const auto start = Clock::now();
  for (;;) {
    const Probe p = probe();
    if (p != Probe::kPending) return p;
    if (now() >= deadline) return Probe::kPending;
    if (Clock::now() - start > std::chrono::milliseconds(1))
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace dlb::nccl

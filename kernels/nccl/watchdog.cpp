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

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    armed_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Watchdog& Watchdog::Process() {
  static Watchdog dog;
  return dog;
}

uint64_t Watchdog::Arm(Clock::time_point deadline, std::function<void()> on_expiry) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  const uint64_t token = next_++;
  armed_[token] = Entry{deadline, std::move(on_expiry)};
  // The thread sleeps until the earliest deadline; only a new earliest one needs to wake it.
  bool earliest = true;
  for (const auto& [t, e] : armed_)
    if (t != token && e.deadline <= deadline) earliest = false;
  if (earliest && deadline != Clock::time_point::max()) cv_.notify_all();
  return token;
}

bool Watchdog::Disarm(uint64_t token) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return running_ != token; });
  armed_.erase(token);
  const auto f = fired_.find(token);
  if (f == fired_.end()) return false;
  fired_.erase(f);
  return true;
}

void Watchdog::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    auto next = armed_.end();
    for (auto it = armed_.begin(); it != armed_.end(); ++it)
      if (next == armed_.end() || it->second.deadline < next->second.deadline) next = it;
    if (next == armed_.end() || next->second.deadline == Clock::time_point::max()) {
      cv_.wait(lock);
      continue;
    }
    if (Clock::now() < next->second.deadline) {
      cv_.wait_until(lock, next->second.deadline);
      continue;
    }
    const uint64_t token = next->first;
    std::function<void()> fire = std::move(next->second.on_expiry);
    armed_.erase(next);
    running_ = token;
    lock.unlock();
    try {
      if (fire) fire();
    } catch (...) {
      // An abort that fails has nothing left to abort; the armed caller learns it fired.
    }
    lock.lock();
    running_ = 0;
    fired_[token] = true;
    cv_.notify_all();
  }
}

}  // namespace dlb::nccl

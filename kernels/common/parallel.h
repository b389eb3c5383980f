// Host-side loops over big tensors (seeding, dtype and layout conversion, sampled reference
// checks) split across the machine's cores. Setup work only: the timed ops use their library's
// own threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace dlb {

// Calls fn(begin, end) on disjoint chunks covering [0, n), on up to one thread per core; a range
// shorter than `grain` per thread runs on the calling thread. The first exception thrown by any
// chunk is rethrown here after every thread has joined.
template <class Fn>
void ParallelFor(size_t n, size_t grain, Fn&& fn) {
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = std::min(cores, n / std::max<size_t>(grain, 1) + 1);
  if (threads <= 1) {
    fn(size_t(0), n);
    return;
  }
  std::vector<std::exception_ptr> errors(threads);
  std::vector<std::thread> pool;
  pool.reserve(threads);
  const size_t chunk = (n + threads - 1) / threads;
  for (size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      try {
        fn(std::min(n, t * chunk), std::min(n, (t + 1) * chunk));
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  }
  for (std::thread& th : pool) th.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

// Calls fn(i) for every i in [0, n) on up to `max_threads` threads (0: one per core), each thread
// taking the next index when it is done with one: for items of very uneven cost. The first
// exception thrown is rethrown here after every thread has joined; items not yet started then
// are skipped.
template <class Fn>
void ParallelEach(size_t n, size_t max_threads, Fn&& fn) {
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = std::min({n, max_threads == 0 ? cores : max_threads, cores});
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::exception_ptr> errors(threads);
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      try {
        for (size_t i = next++; i < n && !failed; i = next++) fn(i);
      } catch (...) {
        errors[t] = std::current_exception();
        failed = true;
      }
    });
  }
  for (std::thread& th : pool) th.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace dlb

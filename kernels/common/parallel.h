// Host-side loops over big tensors (seeding, dtype and layout conversion, sampled reference
// checks) split across the machine's cores. Setup work only: the timed ops use their library's
// own threads.
#pragma once

#include <algorithm>
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

}  // namespace dlb

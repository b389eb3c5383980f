#include "kernels/common/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace dlb {
namespace {

TEST(ParallelFor, CoversEveryIndexOnce) {
  for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(100003)}) {
    std::vector<std::atomic<int>> hits(n);
    ParallelFor(n, 16, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) ++hits[i];
    });
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1) << "n " << n << " index " << i;
  }
}

TEST(ParallelEach, CoversEveryIndexOnceWhateverItsCost) {
  for (size_t threads : {size_t(0), size_t(1), size_t(3)}) {
    const size_t n = 50;
    std::vector<std::atomic<int>> hits(n);
    ParallelEach(n, threads, [&](size_t i) {
      // Uneven items: a few slow ones must not hold back the rest.
      if (i % 17 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ++hits[i];
    });
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1) << "threads " << threads << " index " << i;
  }
}

TEST(ParallelEach, RethrowsAfterJoiningAndSkipsWhatIsLeft) {
  std::atomic<int> done{0};
  EXPECT_THROW(ParallelEach(size_t(10000), 2,
                            [&](size_t i) {
                              if (i == 3) throw std::runtime_error("item 3");
                              std::this_thread::sleep_for(std::chrono::microseconds(50));
                              ++done;
                            }),
               std::runtime_error);
  EXPECT_LT(done.load(), 10000 - 1);
}

}  // namespace
}  // namespace dlb
